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
#
# With "collectives" it instead times the barrier and all-reduce on the
# 4 ranks (2 + 2): examples/barrier and examples/collectives, and Open
# MPI's MPI_Barrier and MPI_Allreduce (bench/mpi/collbench.c) with one
# orted per namespace, started by mpirun through bench/mpi/netns_rsh (an
# rsh agent that enters the namespace of a hostfile's fake host), vader
# within a namespace and tcp over the veth between them; ROUNDS rounds
# (default 3), interleaved, then a side-by-side table of the medians.
# Environment: ROUNDS, REP_SECONDS, REPS (default 0.4, 5), SIZES (the
# all-reduce's, bytes: MIN,MAX,FACTOR; default 8,1048576,16); RDMACTOR_*
# settings pass to the ranks (RDMACTOR_OFI_WAIT=poll, say).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/netns.sh # veth_join
. scripts/lib/bench.sh # host, MEDIAN_AWK

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
# succeed. Their output is in $dir/NAME.{0,1}. Both "hosts" share this
# machine's processors, so neither launcher binds its ranks (-bind none).
job() {
  local name=$1 port=$((20000 + RANDOM % 20000)) pids=() k ns iface rc=0
  shift
  for k in 0 1; do
    ns=$a iface=$va
    if [ "$k" = 1 ]; then ns=$b iface=$vb; fi
    ip netns exec "$ns" env RDMACTOR_HOST_ID="host$k" RDMACTOR_JOB_SECRET="$secret" \
      RDMACTOR_OFI_PROVIDER=tcp RDMACTOR_OFI_IFACE="$iface" \
      "$dir/rdmarun" -nnodes 2 -node-rank "$k" -master "10.178.0.1:$port" -np 2 -bind none -transport auto -timeout 4m \
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

if [ "${1:-}" = collectives ]; then
  rounds=${ROUNDS:-3} rep=${REP_SECONDS:-0.4} reps=${REPS:-5}
  IFS=, read -r smin smax sfac <<<"${SIZES:-8,1048576,16}"
  mpi=
  if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
    echo "two hosts: Open MPI not run: no mpicc/mpirun (Debian: openmpi-bin libopenmpi-dev)"
  elif ! command -v unshare >/dev/null 2>&1; then
    echo "two hosts: Open MPI not run: no unshare(1), which bench/mpi/netns_rsh needs"
  else
    mpicc -O2 -o "$dir/collbench" bench/mpi/collbench.c
    printf 'host0 slots=2\nhost1 slots=2\n' >"$dir/hostfile"
    mpi=1
  fi
  for r in $(seq "$rounds"); do
    host
    echo "== round $r of $rounds: rdmactor, 2 + 2 ranks (auto: shm within a namespace, ofi tcp between)"
    # -idle yield: the two namespaces share this machine's cores, which
    # no rank can tell (each "host" has 2 ranks for its 2 cores, so -idle
    # auto would spin 4 ranks on 2 cores), as mpi_yield_when_idle below.
    job barrier.$r barrier -idle yield -bind none -checks 0 -rep-seconds "$rep" -reps "$reps" # timing only
    job coll.$r collectives -colls allreduce -b "$smin" -e "$smax" -f "$sfac" -idle yield -bind none \
      -rep-seconds "$rep" -reps "$reps"
    { sed -n 's/^\[0\] \(barrier[a-z_0-9]*_latency: \)/\1/p' "$dir/barrier.$r.0"
      # examples/collectives' table: collective, size, ..., algorithm, time (µs).
      awk '$1 == "[0]" && $2 == "allreduce" && $3 ~ /^[0-9]+$/ {print "allreduce_" $3 "B_sum_latency:", $9, "us"}' "$dir/coll.$r.0"
    } | tee "$dir/rdmactor.$r.txt"
    if [ -n "$mpi" ]; then
      host
      echo "== round $r of $rounds: Open MPI, 2 + 2 ranks (vader within a namespace, tcp between)"
      # mpirun in the first namespace; an orted in each through netns_rsh.
      # Each fake host has 2 slots for 2 cores, so Open MPI would not see
      # that the 4 ranks share 2 cores: mpi_yield_when_idle says so, as
      # rdmactor's -idle yield does.
      if ! RDX_NETNS_HOSTS="host0=$a host1=$b" ip netns exec "$a" mpirun --allow-run-as-root -np 4 \
        --hostfile "$dir/hostfile" --mca plm_rsh_agent "$PWD/bench/mpi/netns_rsh" --bind-to none \
        --mca btl vader,tcp,self --mca btl_tcp_if_include 10.178.0.0/24 --mca oob_tcp_if_include 10.178.0.0/24 \
        --mca mpi_yield_when_idle 1 \
        "$dir/collbench" -r "$rep" -n "$reps" -b "$smin" -e "$smax" -f "$sfac" >"$dir/mpi.$r.out" 2>&1; then
        echo "two hosts: mpirun across the namespaces failed:"; cat "$dir/mpi.$r.out"; exit 1
      fi
      grep -v '^#' "$dir/mpi.$r.out" | tee "$dir/mpi.$r.txt"
      grep '^# rank' "$dir/mpi.$r.out" | tr '\n' ' '; echo
    fi
  done
  echo
  echo "== 4 ranks, 2 + 2 across two network namespaces: median over $rounds round(s); ratio = Open MPI time / rdmactor time (> 1: rdmactor is faster)"
  rows="barrier_4ranks_latency barrier_latency
barrier_dissemination_4ranks_latency barrier_latency
barrier_hierarchical_4ranks_latency barrier_latency"
  for ((n = smin; n <= smax; n *= sfac)); do rows+=$'\n'"allreduce_${n}B_sum_latency allreduce_${n}B_sum_latency"; done
  printf '%s\n' "$rows" | awk -v out="$dir" -v rounds="$rounds" "$MEDIAN_AWK"'
    BEGIN { printf "%-52s %12s %12s %8s\n", "figure", "rdmactor", "Open MPI", "ratio" }
    {
      a = med("rdmactor", $1); b = med("mpi", $2)
      if (a == "" || b == "") { printf "%-52s %12s %12s\n", $1, (a == "" ? "-" : a " us"), (b == "" ? "-" : b " us"); next }
      printf "%-52s %9.1f us %9.1f us %7.2fx\n", $1, a, b, b / a
    }'
  exit 0
fi

job putsignal putsignal -bytes 65536
# Ranks 0,1 on host0 and 2,3 on host1: each gets its left neighbour's
# block, so 1 <- 0 and 3 <- 2 ride shm, 0 <- 3 and 2 <- 1 ride ofi.
n=$(cat "$dir"/putsignal.* | grep -c 'got 65536 bytes from rank .* via auto, verified' || true)
if [ "$n" != 4 ]; then echo "two hosts: putsignal verified $n of 4 ranks"; cat "$dir"/putsignal.*; exit 1; fi
# examples/barrier checks the flat barrier across the hosts (strong
# signals imply the puts), and the dissemination and hierarchical
# barriers only within one; it runs all three across them.
job barrier barrier -checks 500 -reps 1 -rep-seconds 0.02 -bind none
job collectives collectives -b 8 -e 64K -reps 1 -rep-seconds 0.02 -bind none
job actors actors -repeat 5
grep -q 'matches a count by rank 0 alone' "$dir"/actors.0 || { echo "two hosts: actors did not check"; cat "$dir"/actors.*; exit 1; }
job moe moe -tokens 64 -iters 2
