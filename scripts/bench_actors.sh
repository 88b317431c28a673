#!/usr/bin/env bash
# Benchmarks of rdmactor's actors against protoactor-go's own remote (gRPC
# over loopback), the anchor, measured side by side in the same processes
# and the same run (examples/pingpong alternates the transports in every
# repetition):
#
#  1. builds bin/rdmarun, bin/pingpong and bin/actors;
#  2. bin/rdmarun -np 2 bin/pingpong: request/response round trips (warm
#     and after an idle pause), 1 sender -> 1 receiver throughput, CPU per
#     message, idle CPU;
#  3. bin/rdmarun -np 5 bin/pingpong: 4 senders -> 1 receiver as well;
#  4. bin/rdmarun -np 2 bin/pingpong -anchor none: idle CPU of rdmactor
#     alone (no second actor system or gRPC server in the process);
#  5. bin/rdmarun -np 4 bin/actors: the distributed word count, checked.
#
# Usage: scripts/bench_actors.sh [pingpong flags, e.g. -reps 5 -size 64]
# Environment: OUT=dir keeps the raw outputs there (default: a temporary
# directory, removed at exit). Only ratios within one run mean anything on
# a shared or noisy host; the CPU per message is the steadiest figure.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh # bench_out

bench_out

echo "== build"
go build -o bin/ ./cmd/rdmarun ./examples/pingpong ./examples/actors

echo "== host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(uname -r), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

run() { # name np args...
  local name=$1 np=$2
  shift 2
  echo "== $name: bin/rdmarun -np $np bin/pingpong $*"
  bin/rdmarun -np "$np" -timeout 15m bin/pingpong "$@" | sed 's/^\[[0-9]*\] //' | tee "$out/$name.txt"
}

run pingpong-np2 2 "$@"
run pingpong-np5 5 -idle-n 0 -idle-window 0 "$@"
run idle-alone 2 -anchor none -codec=false -n 1000 -idle-n 5 -msgs 1000 -reps 1 -idle-window 2s

echo "== word count: bin/rdmarun -np 4 bin/actors"
bin/rdmarun -np 4 -timeout 5m bin/actors | sed 's/^\[[0-9]*\] //' | tee "$out/actors.txt"

echo
echo "== summary (same run; ratio = protoremote/rdmactor for times, rdmactor/protoremote for rates)"
grep -h '^# ' "$out/pingpong-np2.txt" | grep -E 'figure|rtt|throughput_1to1|ratio:' || true
grep -h '^# ' "$out/pingpong-np5.txt" | grep -E 'throughput_[0-9]+to1' | grep -v 1to1 || true
grep -h 'CPU per message' "$out/pingpong-np2.txt" "$out/pingpong-np5.txt" | sed 's/^# /#   /' || true
grep -h '^idle_cpu' "$out/idle-alone.txt" | sed 's/^/# rdmactor alone, /' || true
