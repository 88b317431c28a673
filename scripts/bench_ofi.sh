#!/usr/bin/env bash
# Benchmarks of the ofi provider (docs/ofi.md): rdmactor's 8 B put+signal
# latency and 64 KiB / 1 MiB put bandwidth over libfabric, against two
# anchors run in the same script, on the same provider:
#   - fi_pingpong -e rdm (Debian libfabric-bin): 8 B send/recv ping-pong;
#   - transport/rdma/ofi/bench -mode raw: raw libfabric, fi_writedata
#     ping-pong and a window of writes, no rdmactor layer.
# Each round runs the three, one after the other; ROUNDS rounds (default 3)
# and the median of all runs is reported, with rdmactor's ratio to each
# anchor. The machine should be otherwise idle: on a loaded 2-core VM every
# number (the anchors' too) moves by several times.
#
# Usage: scripts/bench_ofi.sh [provider...]   (default: tcp sockets)
# Environment: ROUNDS, REPS (runs per test in each process, default 5),
# LAT_ITERS (round trips per latency run, default 10000).
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
if [ ! -f /usr/include/rdma/fabric.h ] || ! need fi_pingpong; then
  if need apt-get; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric-dev libfabric-bin >/dev/null
  fi
fi
need fi_pingpong || { echo "bench_ofi.sh: fi_pingpong (libfabric-bin) is required"; exit 1; }

ROUNDS=${ROUNDS:-3}
REPS=${REPS:-5}
LAT_ITERS=${LAT_ITERS:-10000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -tags ofi -o "$tmp/bench" ./transport/rdma/ofi/bench
go build -o "$tmp/rdmarun" ./cmd/rdmarun

port=$((40000 + RANDOM % 20000))

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

for prov in "${@:-tcp sockets}"; do
  res="$tmp/$prov.txt"
  : >"$res"
  for round in $(seq "$ROUNDS"); do
    echo "# $prov, round $round/$ROUNDS" >&2
    # fi_pingpong: 8 B, usec/xfer (half a round trip). On sockets it runs
    # with the provider's auto progress, milliseconds per transfer: fewer.
    fpi=$LAT_ITERS
    [ "$prov" = sockets ] && fpi=$((LAT_ITERS / 20 + 1))
    for rep in $(seq "$REPS"); do
      port=$((port + 1))
      fi_pingpong -e rdm -p "$prov" -S 8 -I "$fpi" -B "$port" >"$tmp/fps.txt" 2>&1 &
      spid=$!
      sleep 0.3
      if fi_pingpong -e rdm -p "$prov" -S 8 -I "$fpi" -P "$port" 127.0.0.1 >"$tmp/fpc.txt" 2>&1; then
        awk '$1 == 8 && NF >= 8 {print "RESULT fi_pingpong latency 8", $(NF-1), "us"}' "$tmp/fpc.txt" >>"$res"
      else
        echo "fi_pingpong -p $prov failed:" >&2; cat "$tmp/fpc.txt" >&2
      fi
      wait "$spid" || true
    done
    # raw libfabric, server and client on loopback: polling fi_cq_read,
    # then blocking in fi_cq_sread (as the ofi provider's progress
    # goroutine does once idle).
    sreads="false true"
    # sockets' fi_cq_sread does not progress sends: its bandwidth loop stalls
    # (and the ofi provider never blocks there, it naps: config.go, quirks).
    [ "$prov" = sockets ] && sreads=false
    for sread in $sreads; do
      port=$((port + 1))
      "$tmp/bench" -mode raw -role server -prov "$prov" -addr "127.0.0.1:$port" -sread="$sread" -reps "$REPS" -lat-iters "$LAT_ITERS" >/dev/null &
      spid=$!
      "$tmp/bench" -mode raw -role client -prov "$prov" -addr "127.0.0.1:$port" -sread="$sread" -reps "$REPS" -lat-iters "$LAT_ITERS" | tee -a "$res" >&2
      wait "$spid"
    done
    # rdmactor: two ranks through the launcher, as any ofi job.
    RDMACTOR_OFI_PROVIDER=$prov "$tmp/rdmarun" -np 2 -transport ofi -timeout 10m \
      "$tmp/bench" -mode gin -reps "$REPS" -lat-iters "$LAT_ITERS" | sed 's/^\[0\] //' | tee -a "$res" >&2
  done

  echo
  echo "## $prov ($(grep -m1 -o 'raw libfabric on .*' "$res" | sed 's/raw libfabric on //' || echo "$prov")), median of $((ROUNDS * REPS)) runs each"
  echo
  echo "| test | fi_pingpong | raw (fi_cq_read) | raw (fi_cq_sread) | rdmactor | rdmactor / raw read | rdmactor / raw sread | rdmactor / fi_pingpong |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
  get() { awk -v m="$1" -v t="$2" -v s="$3" '$1 == "RESULT" && $2 == m && $3 == t && $4 == s {print $5}' "$res" | median; }
  fp=$(get fi_pingpong latency 8)
  raw=$(get raw latency 8)
  rws=$(get raw-sread latency 8)
  gin=$(get gin latency 8)
  awk -v fp="$fp" -v raw="$raw" -v rws="$rws" -v gin="$gin" 'BEGIN {
    printf "| 8 B put+signal latency (µs, half round trip) | %s | %s | %s | %s | %.2f | %s | %.2f |\n", fp, raw, rws, gin, gin / raw, ratio(gin, rws), gin / fp }
    function ratio(a, b) { return b == "nan" ? "n/a" : sprintf("%.2f", a / b) }'
  for size in 65536 1048576; do
    raw=$(get raw bw "$size")
    rws=$(get raw-sread bw "$size")
    gin=$(get gin bw "$size")
    awk -v size="$size" -v raw="$raw" -v rws="$rws" -v gin="$gin" 'BEGIN {
      printf "| %d KiB put bandwidth (MB/s) | | %s | %s | %s | %.2f | %s | |\n", size / 1024, raw, rws, gin, gin / raw, ratio(gin, rws) }
      function ratio(a, b) { return b == "nan" ? "n/a" : sprintf("%.2f", a / b) }'
  done
done
