#!/usr/bin/env bash
# Scaling measurements of docs/scaling.md, in one command:
#
#  1. builds bin/rdmarun and bin/rdmascale;
#  2. for N = 2, 4, 8: bin/rdmarun -np N bin/rdmascale (ranks as processes);
#  3. for N = 2, 4, 8, 16, 32, 64: bin/rdmascale -local N (ranks as
#     goroutines of one process);
#  4. plots the records (scripts/scaling/plot, on gonum/plot) into PNGs and prints the fitted cost models, extrapolated to
#     1,024 and 16,384 ranks, as a Markdown table (models.md).
#
# Usage: scripts/scaling.sh [rdmascale flags, e.g. -reps 3]
# Environment: OUT=dir (default docs/scaling) receives data.jsonl, host.txt,
# models.md and the PNGs. Timings mean something only on a quiet host: on
# one with fewer cores than ranks they measure the scheduler as much as
# rdmactor (host.txt records the cores and the load).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-docs/scaling}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/data.jsonl"

echo "== build"
go build -o bin/ ./cmd/rdmarun ./cmd/rdmascale

host() {
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem/ {print $2}') GiB, $(uname -r), $(go version | cut -d' ' -f3), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
echo "start: $(host)" | tee "$out/host.txt"

for n in 2 4 8; do
  echo "== $n ranks as processes"
  bin/rdmarun -np "$n" -timeout 15m bin/rdmascale -out "$out/data.jsonl" "$@"
done
for n in 2 4 8 16 32 64; do
  echo "== $n ranks as goroutines"
  bin/rdmascale -local "$n" -out "$out/data.jsonl" "$@"
done
echo "end: $(host)" | tee -a "$out/host.txt"

echo "== plot"
go run ./scripts/scaling/plot -in "$out/data.jsonl" -out "$out" | tee "$out/models.md"
ls "$out"
