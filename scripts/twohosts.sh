#!/usr/bin/env bash
# Two hosts on one machine: network namespaces joined by a veth pair, each
# with its own host identity (RDMACTOR_HOST_ID), 2 ranks in each, started
# by one rdmarun per "host" (-nnodes 2). The examples run unchanged with
# RDMACTOR_TRANSPORT=auto: shm between the ranks of one namespace, ofi
# (libfabric tcp over the veth pair) between the namespaces. Needs root
# (or CAP_SYS_ADMIN), iproute2 and libfabric-dev; it says why and exits 0
# where it cannot run. scripts/test.sh calls it; alone:
#
#	sudo scripts/twohosts.sh
#
# With "pingpong [ARGS...]" it instead runs examples/pingpong with one
# rank per host (ARGS are pingpong's; TRANSPORT=auto by default) against
# protoactor-go remote between the same namespaces, and prints its table.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/netns.sh # veth_join

if ! command -v ip >/dev/null 2>&1; then echo "two-host test skipped: no ip(8) (iproute2)"; exit 0; fi
if [ ! -f /usr/include/rdma/fabric.h ]; then echo "two-host test skipped: no libfabric-dev"; exit 0; fi
a=rdxha$$ b=rdxhb$$ va=rhva$$ vb=rhvb$$
dir="${TMPDIR:-/tmp}/rdx-twohosts-$$"
if ! ip netns add "$a" 2>/dev/null; then
  echo "two-host test skipped: cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"; exit 0
fi
trap 'ip netns del '"$a"' 2>/dev/null; ip netns del '"$b"' 2>/dev/null; rm -rf '"$dir" EXIT
veth_join "$a" "$b" "$va" "$vb" 10.178.0

mkdir -p "$dir"
go build -tags ofi -o "$dir/" ./cmd/rdmarun ./examples/putsignal ./examples/barrier ./examples/collectives \
  ./examples/actors ./examples/moe ./examples/pingpong
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

if [ "${1:-}" = pingpong ]; then
  shift
  port=$((20000 + RANDOM % 20000)) pids=()
  for k in 0 1; do
    ns=$a iface=$va
    if [ "$k" = 1 ]; then ns=$b iface=$vb; fi
    ip netns exec "$ns" env RDMACTOR_HOST_ID="host$k" RDMACTOR_JOB_SECRET="$secret" \
      RDMACTOR_OFI_PROVIDER=tcp RDMACTOR_OFI_IFACE="$iface" \
      "$dir/rdmarun" -nnodes 2 -node-rank "$k" -master "10.178.0.1:$port" -np 1 -transport "${TRANSPORT:-auto}" -timeout 10m \
      "$dir/pingpong" -anchor-host "10.178.0.$((k + 1))" "$@" >"$dir/pingpong.$k" 2>&1 &
    pids+=($!)
  done
  rc=0
  for k in 0 1; do wait "${pids[$k]}" || rc=$?; done
  if [ "$rc" != 0 ]; then cat "$dir"/pingpong.*; exit "$rc"; fi
  grep '^\[0\] #' "$dir/pingpong.0"
  exit 0
fi

# job NAME PROG [ARGS...]: one rdmarun per namespace, node 0 in $a (rank
# 0 serves the rendezvous on its veth address), node 1 in $b; both must
# succeed. Their output is in $dir/NAME.{0,1}.
job() {
  local name=$1 port=$((20000 + RANDOM % 20000)) pids=() k ns iface rc=0
  shift
  for k in 0 1; do
    ns=$a iface=$va
    if [ "$k" = 1 ]; then ns=$b iface=$vb; fi
    ip netns exec "$ns" env RDMACTOR_HOST_ID="host$k" RDMACTOR_JOB_SECRET="$secret" \
      RDMACTOR_OFI_PROVIDER=tcp RDMACTOR_OFI_IFACE="$iface" \
      "$dir/rdmarun" -nnodes 2 -node-rank "$k" -master "10.178.0.1:$port" -np 2 -transport auto -timeout 4m \
      "$dir/$1" "${@:2}" >"$dir/$name.$k" 2>&1 &
    pids+=($!)
  done
  for k in 0 1; do wait "${pids[$k]}" || rc=$?; done
  if [ "$rc" != 0 ]; then
    echo "two hosts: $name failed ($rc)"; for k in 0 1; do echo "-- host$k:"; cat "$dir/$name.$k"; done
    return 1
  fi
  echo "two hosts: $name ok"
}

job putsignal putsignal -bytes 65536
# Ranks 0,1 on host0 and 2,3 on host1: each gets its left neighbour's
# block, so 1 <- 0 and 3 <- 2 ride shm, 0 <- 3 and 2 <- 1 ride ofi.
n=$(cat "$dir"/putsignal.* | grep -c 'got 65536 bytes from rank .* via auto, verified' || true)
if [ "$n" != 4 ]; then echo "two hosts: putsignal verified $n of 4 ranks"; cat "$dir"/putsignal.*; exit 1; fi
job barrier barrier -checks 200 -reps 1 -rep-seconds 0.02 -bind none
job collectives collectives -b 8 -e 64K -reps 1 -rep-seconds 0.02 -bind none
job actors actors -repeat 5
grep -q 'matches a count by rank 0 alone' "$dir"/actors.0 || { echo "two hosts: actors did not check"; cat "$dir"/actors.*; exit 1; }
job moe moe -tokens 64 -iters 2
