#!/usr/bin/env bash
# Benchmarks of the ofi provider (docs/ofi.md): rdmactor's 8 B put+signal
# latency and 64 KiB / 1 MiB put bandwidth over libfabric, against
# anchors run in the same script, on the same provider:
#   - fi_pingpong -e rdm (Debian libfabric-bin): 8 B send/recv ping-pong;
#   - bench/ofiraw -mode raw: raw libfabric, fi_writedata
#     ping-pong and a window of writes, no rdmactor layer, its loops in C
#     (spinning on fi_cq_read, and blocking in fi_cq_sread), and the same
#     loops driven from Go (-loop go: what the Go runtime adds; -loop
#     goyield: the same, yielding as the ofi provider does).
# Each round runs them all, one after the other; ROUNDS rounds (default 3)
# and the median of all runs (ROUNDS x REPS) is reported, with rdmactor's
# ratio to each anchor: the ratio of those medians, and the median over
# the rounds of each round's ratio (runs a few seconds apart, so a round
# spent in one of this VM's slow regimes compares like with like). The
# machine should be otherwise idle: on a loaded 2-core VM every number (the
# anchors' too) moves by several times.
#
# With "twohosts" first, the two sides run in two network namespaces
# joined by a veth pair (scripts/lib/netns.sh), standing for two hosts:
# the server (raw) and rank 0 (rdmactor, through one rdmarun -nnodes 2 per
# namespace, each with its own RDMACTOR_HOST_ID) in the first, the client
# and rank 1 in the second, every fabric on the veth (-iface,
# RDMACTOR_OFI_IFACE). It needs root (or CAP_SYS_ADMIN) and says why it
# stops otherwise.
#
# Usage: scripts/bench_ofi.sh [twohosts] [provider...]   (default: tcp sockets)
# Environment: ROUNDS, REPS (runs per test in each process, default 5),
# LAT_ITERS (round trips per latency run, default 10000), BW_SIZES
# (bandwidth sizes in bytes, comma-separated, default 65536,1048576; with
# twohosts 4096,65536,1048576,4194304),
# RAW_RUNS (the raw loops to run, LOOP:SREAD words, default "c:false
# go:false goyield:false c:true"), TRANSPORT (rdmactor's with twohosts: ofi, the
# default, or auto).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/netns.sh # veth_join

twohosts=
if [ "${1:-}" = twohosts ]; then twohosts=1; shift; fi

need() { command -v "$1" >/dev/null 2>&1; }
if [ ! -f /usr/include/rdma/fabric.h ] || ! need fi_pingpong; then
  if need apt-get; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libfabric-dev libfabric-bin >/dev/null
  fi
fi
need fi_pingpong || { echo "bench_ofi.sh: fi_pingpong (libfabric-bin) is required"; exit 1; }

# The anchors spin on fi_cq_read with no CQ wait object: rdmactor is
# measured the same way (RDMACTOR_OFI_WAIT=poll) unless told otherwise.
export RDMACTOR_OFI_WAIT=${RDMACTOR_OFI_WAIT:-poll}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-5}
LAT_ITERS=${LAT_ITERS:-10000}
bw_default=65536,1048576
[ -n "$twohosts" ] && bw_default=4096,65536,1048576,4194304
BW_SIZES=${BW_SIZES:-$bw_default}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# srv and cli run a command on the server's and the client's side; host is
# the server's address; ifa and ifb the fabric's interface on each side.
srv() { "$@"; }
cli() { "$@"; }
host=127.0.0.1 ifa= ifb=
if [ -n "$twohosts" ]; then
  command -v ip >/dev/null 2>&1 || { echo "bench_ofi.sh twohosts: no ip(8) (iproute2)"; exit 1; }
  nsa=rdxoa$$ nsb=rdxob$$ ifa=rova$$ ifb=rovb$$
  if ! ip netns add "$nsa" 2>/dev/null; then
    echo "bench_ofi.sh twohosts: cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"; exit 1
  fi
  trap 'ip netns del '"$nsa"' 2>/dev/null; ip netns del '"$nsb"' 2>/dev/null; rm -rf "$tmp"' EXIT
  veth_join "$nsa" "$nsb" "$ifa" "$ifb" 10.178.0
  srv() { ip netns exec "$nsa" "$@"; }
  cli() { ip netns exec "$nsb" "$@"; }
  host=10.178.0.1
  secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
fi
go build -tags ofi -o "$tmp/bench" ./bench/ofiraw
go build -o "$tmp/rdmarun" ./cmd/rdmarun

port=$((40000 + RANDOM % 20000))

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

for prov in "${@:-tcp sockets}"; do
  res="$tmp/$prov.txt"
  : >"$res"
  for round in $(seq "$ROUNDS"); do
    echo "# $prov, round $round/$ROUNDS, load $(cut -d" " -f1-3 /proc/loadavg)" >&2
    echo "ROUND $round" >>"$res"
    # fi_pingpong: 8 B, usec/xfer (half a round trip). On sockets it runs
    # with the provider's auto progress, milliseconds per transfer: fewer.
    fpi=$LAT_ITERS
    [ "$prov" = sockets ] && fpi=$((LAT_ITERS / 20 + 1))
    for rep in $(seq "$REPS"); do
      port=$((port + 1))
      srv fi_pingpong -e rdm -p "$prov" -S 8 -I "$fpi" -B "$port" >"$tmp/fps.txt" 2>&1 &
      spid=$!
      sleep 0.3
      if cli fi_pingpong -e rdm -p "$prov" -S 8 -I "$fpi" -P "$port" "$host" >"$tmp/fpc.txt" 2>&1; then
        awk '$1 == 8 && NF >= 8 {print "RESULT fi_pingpong latency 8", $(NF-1), "us"}' "$tmp/fpc.txt" >>"$res"
      else
        echo "fi_pingpong -p $prov failed:" >&2; cat "$tmp/fpc.txt" >&2
      fi
      wait "$spid" || true
    done
    # raw libfabric, server and client (on loopback, or one in each
    # namespace): polling fi_cq_read in
    # C, the same loops in Go (one cgo call per post and per CQ read), and
    # blocking in fi_cq_sread (as the ofi provider's progress goroutine
    # does once idle).
    runs="c:false go:false goyield:false"
    # sockets' fi_cq_sread does not progress sends: its bandwidth loop stalls
    # (and the ofi provider never blocks there, it naps: config.go, quirks).
    [ "$prov" = sockets ] || runs="$runs c:true"
    runs=${RAW_RUNS:-$runs}
    for run in $runs; do
      loop=${run%:*} sread=${run#*:}
      port=$((port + 1))
      srv "$tmp/bench" -mode raw -role server -prov "$prov" -iface "$ifa" -addr "$host:$port" -loop "$loop" -sread="$sread" \
        -reps "$REPS" -lat-iters "$LAT_ITERS" -bw-sizes "$BW_SIZES" >/dev/null &
      spid=$!
      cli "$tmp/bench" -mode raw -role client -prov "$prov" -iface "$ifb" -addr "$host:$port" -loop "$loop" -sread="$sread" \
        -reps "$REPS" -lat-iters "$LAT_ITERS" -bw-sizes "$BW_SIZES" | tee -a "$res" >&2
      wait "$spid"
    done
    # rdmactor: two ranks through the launcher, as any ofi job.
    gargs=(-mode gin -reps "$REPS" -lat-iters "$LAT_ITERS" -bw-sizes "$BW_SIZES")
    if [ -z "$twohosts" ]; then
      RDMACTOR_OFI_PROVIDER=$prov "$tmp/rdmarun" -np 2 -transport ofi -timeout 10m \
        "$tmp/bench" "${gargs[@]}" | sed 's/^\[0\] //' | tee -a "$res" >&2
    else
      # One launcher per "host", as scripts/twohosts.sh; rank 0 serves the
      # rendezvous on its veth address.
      port=$((port + 1))
      for k in 0 1; do
        side=srv iface=$ifa
        if [ "$k" = 1 ]; then side=cli iface=$ifb; fi
        "$side" env RDMACTOR_HOST_ID="host$k" RDMACTOR_JOB_SECRET="$secret" RDMACTOR_OFI_PROVIDER="$prov" \
          RDMACTOR_OFI_IFACE="$iface" "$tmp/rdmarun" -nnodes 2 -node-rank "$k" -master "$host:$port" -np 1 \
          -transport "${TRANSPORT:-ofi}" -timeout 10m "$tmp/bench" "${gargs[@]}" >"$tmp/gin.$k" 2>&1 &
        gpids[k]=$!
      done
      grc=0
      for k in 0 1; do wait "${gpids[k]}" || grc=$?; done
      if [ "$grc" != 0 ]; then echo "rdmactor between the namespaces failed ($grc):" >&2; cat "$tmp"/gin.* >&2; exit 1; fi
      sed -n 's/^\[0\] //p' "$tmp/gin.0" | tee -a "$res" >&2
    fi
  done

  echo
  where="loopback"
  [ -n "$twohosts" ] && where="two network namespaces over a veth pair"
  echo "## $prov, $where ($(grep -m1 -o 'raw libfabric on .*' "$res" | sed 's/raw libfabric on //' || echo "$prov")), median of $((ROUNDS * REPS)) runs each"
  echo
  echo "| test | fi_pingpong | raw (C loop) | raw (Go loop) | raw (Go loop, goyield) | raw (fi_cq_sread) | rdmactor | rdmactor / raw | per round | rdmactor / raw Go loop | per round | rdmactor / raw goyield | rdmactor / raw sread | rdmactor / fi_pingpong |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  # vals variant test size [round]: every run's value (a RESULT line
  # carries its process's runs in brackets; fi_pingpong's, one).
  vals() {
    awk -v m="$1" -v t="$2" -v s="$3" -v r="${4:-}" '$1 == "ROUND" {cur = $2}
      $1 == "RESULT" && $2 == m && $3 == t && $4 == s && (r == "" || cur == r) {
        if (!match($0, /\[[^]]*\]/)) { print $5; next }
        n = split(substr($0, RSTART + 1, RLENGTH - 2), a, " "); for (i = 1; i <= n; i++) print a[i] }' "$res"
  }
  get() { vals "$@" | median; }
  # perRound anchor test size: the median over rounds of rdmactor's
  # median / the anchor's median within the round.
  perRound() {
    for r in $(seq "$ROUNDS"); do
      awk -v a="$(vals gin "$2" "$3" "$r" | median)" -v b="$(vals "$1" "$2" "$3" "$r" | median)" \
        'BEGIN { if (a != "nan" && b != "nan" && b > 0) print a / b }'
    done | median
  }
  row() { # label test size fi_pingpong-value
    awk -v label="$1" -v fp="$4" -v raw="$(get raw "$2" "$3")" -v rgo="$(get raw-go "$2" "$3")" \
      -v rgy="$(get raw-goyield "$2" "$3")" -v rws="$(get raw-sread "$2" "$3")" -v gin="$(get gin "$2" "$3")" \
      -v rraw="$(perRound raw "$2" "$3")" -v rgor="$(perRound raw-go "$2" "$3")" 'BEGIN {
      printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label, fp, v(raw), v(rgo), v(rgy), v(rws), v(gin),
        ratio(gin, raw), r2(rraw), ratio(gin, rgo), r2(rgor), ratio(gin, rgy), ratio(gin, rws), ratio(gin, fp) }
      function v(x) { return x == "nan" ? "n/a" : x }
      function r2(x) { return x == "nan" ? "" : sprintf("%.2f", x) }
      function ratio(a, b) { return (b == "" || b == "nan" || a == "nan") ? "" : sprintf("%.2f", a / b) }'
  }
  row "8 B put+signal latency (µs, half round trip)" latency 8 "$(get fi_pingpong latency 8)"
  for size in ${BW_SIZES//,/ }; do
    row "$((size / 1024)) KiB put bandwidth (MB/s)" bw "$size" ""
  done
done
