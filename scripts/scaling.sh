#!/usr/bin/env bash
# Scaling measurements of docs/scaling.md, in one command:
#
#  1. builds bin/rdmarun and bin/rdmascale;
#  2. for N = 2, 4, 8: bin/rdmarun -np N -bind none bin/rdmascale (ranks as processes);
#  3. for N = 2, 4, 8, 16, 32, 64: bin/rdmascale -local N (ranks as
#     goroutines of one process);
#  4. plots the records (scripts/scaling/plot, on gonum/plot) into PNGs and prints the fitted cost models, extrapolated to
#     1,024 and 16,384 ranks, as a Markdown table (models.md).
#
# Usage: scripts/scaling.sh [rdmascale flags, e.g. -reps 3]
#
# Where go is not installed (a bigger host to measure on), steps 1 and 4
# are skipped: build bin/rdmarun and bin/rdmascale elsewhere
# (CGO_ENABLED=0), copy them with the script, and plot the data.jsonl it
# wrote with the go run line it prints, back where go is.
# Environment: OUT=dir (default docs/scaling) receives data.jsonl, host.txt,
# models.md and the PNGs; PROCESS_RANKS (default "2 4 8") and
# GOROUTINE_RANKS (default "2 4 8 16 32 64") are the N of steps 2 and 3
# (on a host with a core per rank, processes up to 64). Timings mean something only on a quiet host: on
# one with fewer cores than ranks they measure the scheduler as much as
# rdmactor (host.txt records the cores and the load).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${OUT:-docs/scaling}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/data.jsonl"

have_go=true
command -v go >/dev/null || have_go=false
if $have_go; then
  echo "== build"
  go build -o bin/ ./cmd/rdmarun ./cmd/rdmascale
else
  echo "== build: skipped, no go here; using bin/rdmarun and bin/rdmascale as they are"
  for b in bin/rdmarun bin/rdmascale; do
    [ -x "$b" ] || { echo "scaling.sh: $b missing: build it where go is (CGO_ENABLED=0 go build -o bin/ ./cmd/rdmarun ./cmd/rdmascale)" >&2; exit 1; }
  done
fi

host() {
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(free -g | awk '/^Mem/ {print $2}') GiB, $(uname -r), $(grep -a -m1 -o 'go1\.[0-9][0-9.]*' bin/rdmascale), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
}
echo "start: $(host)" | tee "$out/host.txt"

# Ranks unbound (-bind none), as docs/scaling.md's process figures are.
for n in ${PROCESS_RANKS:-2 4 8}; do
  echo "== $n ranks as processes"
  bin/rdmarun -np "$n" -bind none -timeout 15m bin/rdmascale -out "$out/data.jsonl" "$@"
done
for n in ${GOROUTINE_RANKS:-2 4 8 16 32 64}; do
  echo "== $n ranks as goroutines"
  bin/rdmascale -local "$n" -out "$out/data.jsonl" "$@"
done
echo "end: $(host)" | tee -a "$out/host.txt"

if ! $have_go; then
  echo "== plot: skipped, no go here; where go is: go run ./scripts/scaling/plot -in DIR/data.jsonl -out DIR > DIR/models.md"
  ls "$out"
  exit 0
fi
echo "== plot"
go run ./scripts/scaling/plot -in "$out/data.jsonl" -out "$out" | tee "$out/models.md"
ls "$out"
