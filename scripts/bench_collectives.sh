#!/usr/bin/env bash
# Barrier and collective benchmarks of rdmactor against Open MPI over
# shared memory, on this machine, in one invocation:
#
#  1. builds bin/rdmarun, bin/barrier and bin/collectives and runs, for 2
#     and 4 ranks under the launcher, examples/barrier (flat,
#     dissemination and hierarchical barriers; on one host the last is a
#     gather and release through one rank, so the table shows the first
#     two) and examples/collectives -anchor (the
#     anchor's all-reduce and all-to-all figures), with the anchor's method
#     (0.4 s repetitions, median of 5, slowest rank). Like mpirun, the
#     examples pin 2 ranks to a core each and spin (-bind auto, -idle
#     auto), and leave 4 ranks on 2 cores unbound, yielding when idle;
#  2. runs the Open MPI anchor, bench/mpi/rmabench.c, through
#     bench/mpi/rmabench.sh (which installs Open MPI with apt-get if
#     missing, and runs again with
#     OMPI_MCA_btl_vader_single_copy_mechanism=none where CMA is blocked):
#     its barrier, all-reduce and all-to-all figures on 2 ranks, a core
#     each (--bind-to core), and on 4 (--oversubscribe --bind-to none:
#     Open MPI then yields when idle), with the same REP_SECONDS and REPS;
#  3. prints everything side by side. ratio = Open MPI time / rdmactor
#     time (for bandwidths: rdmactor / Open MPI): above 1.00 rdmactor is
#     faster.
#
# Steps 1-2 run ROUNDS times (default 1), interleaved (rdmactor on 2
# ranks, Open MPI on 2 and 4, rdmactor on 4), and each figure is the
# median over rounds: on a shared host other processes' load comes and
# goes, and only figures taken close together compare.
#
# Usage: scripts/bench_collectives.sh
# Environment: ROUNDS=n; REP_SECONDS, REPS (default 0.4, 5), on both
# sides; NO_MPI=1 skips Open MPI (NO_MPI=0 or unset runs it); OUT=dir
# keeps the raw outputs and the anchor's binary (default: a temporary
# directory, removed at exit); IDLE2, IDLE4 (-idle of the 2- and 4-rank
# runs, default auto: spin when ranks fit the cores, yield otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh # bench_out, host, MEDIAN_AWK

rounds=${ROUNDS:-1}
rep=${REP_SECONDS:-0.4}
reps=${REPS:-5}
bench_out

echo "== build"
go build -o bin/ ./cmd/rdmarun ./examples/barrier ./examples/collectives

# rdmactor NP ROUND: both examples under the launcher; rank 0's figures.
rdmactor() {
  local np=$1 r=$2 idle
  idle=$([ "$np" = 2 ] && echo "${IDLE2:-auto}" || echo "${IDLE4:-auto}")
  host
  echo "== rdmactor, $np ranks: bin/barrier and bin/collectives -anchor (-idle $idle)"
  { bin/rdmarun -np "$np" bin/barrier -idle "$idle" -checks 1000 -rep-seconds "$rep" -reps "$reps"
    bin/rdmarun -np "$np" bin/collectives -anchor -idle "$idle" -rep-seconds "$rep" -reps "$reps"
  } | sed 's/^\[[0-9]*\] //' | tee "$out/rdmactor$np.$r.txt"
}

# mpi ROUND: the anchor on 2 ranks, then on 4 (rmabench.sh says why when
# it cannot run).
mpi() {
  local r=$1 np
  for np in 2 4; do
    host
    echo "== Open MPI anchor, $np ranks: bench/mpi/rmabench.sh -r $rep -n $reps $np:barrier,coll"
    bench/mpi/rmabench.sh -o "$out" -r "$rep" -n "$reps" "$np:barrier,coll" 2>&1 | tee "$out/mpi$np.$r.txt" ||
      echo "== Open MPI anchor, $np ranks: failed or not run (above)"
  done
}

for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  rdmactor 2 "$r"
  if [ "${NO_MPI:-0}" = 0 ]; then mpi "$r"; fi
  rdmactor 4 "$r"
done

echo
echo "== side by side (median over $rounds round(s); ratio = Open MPI time / rdmactor time, or rdmactor / Open MPI bandwidth: > 1 means rdmactor is faster)"
# Rows: ranks, rdmactor figure, rdmactor file, Open MPI figure, Open MPI file.
rows='2 barrier_2ranks_latency rdmactor2 barrier_2ranks_latency mpi2
2 barrier_dissemination_2ranks_latency rdmactor2 barrier_2ranks_latency mpi2
2 allreduce_8B_sum_latency rdmactor2 allreduce_8B_sum_latency mpi2
2 allreduce_4MiB_time rdmactor2 allreduce_4MiB_time mpi2
2 allreduce_4MiB_algbw rdmactor2 allreduce_4MiB_algbw mpi2
2 alltoall_128tok_x7168_bf16_time rdmactor2 alltoall_128tok_x7168_bf16_time mpi2
2 alltoall_128tok_x7168_bf16_algbw rdmactor2 alltoall_128tok_x7168_bf16_algbw mpi2
2 alltoall_4096tok_x7168_bf16_time rdmactor2 alltoall_4096tok_x7168_bf16_time mpi2
2 alltoall_4096tok_x7168_bf16_algbw rdmactor2 alltoall_4096tok_x7168_bf16_algbw mpi2
4 barrier_4ranks_oversubscribed_latency rdmactor4 barrier_4ranks_oversubscribed_latency mpi4
4 barrier_dissemination_4ranks_oversubscribed_latency rdmactor4 barrier_4ranks_oversubscribed_latency mpi4
4 allreduce_8B_sum_latency rdmactor4 allreduce_8B_sum_latency mpi4
4 allreduce_4MiB_time rdmactor4 allreduce_4MiB_time mpi4
4 allreduce_4MiB_algbw rdmactor4 allreduce_4MiB_algbw mpi4
4 alltoall_128tok_x7168_bf16_time rdmactor4 alltoall_128tok_x7168_bf16_time mpi4
4 alltoall_128tok_x7168_bf16_algbw rdmactor4 alltoall_128tok_x7168_bf16_algbw mpi4
4 alltoall_4096tok_x7168_bf16_time rdmactor4 alltoall_4096tok_x7168_bf16_time mpi4
4 alltoall_4096tok_x7168_bf16_algbw rdmactor4 alltoall_4096tok_x7168_bf16_algbw mpi4'
printf '%s\n' "$rows" | awk -v out="$out" -v rounds="$rounds" "$MEDIAN_AWK"'
  BEGIN { printf "%5s  %-52s %12s %12s %8s  %s\n", "ranks", "figure", "rdmactor", "Open MPI", "ratio", "target >= 1" }
  {
    a = med($3, $2); b = med($5, $4)
    if (a == "" || b == "") { printf "%5s  %-52s %12s %12s\n", $1, $2, (a == "" ? "-" : a), (b == "" ? "-" : b); next }
    u = unit[$2]
    ratio = (u == "GB/s") ? a / b : b / a
    printf "%5s  %-52s %9.3f %-2s %9.3f %-2s %7.2fx  %s\n", $1, $2, a, (u == "GB/s" ? "GB" : u), b, (u == "GB/s" ? "GB" : u), ratio, (ratio >= 1 ? "met" : "MISSED")
  }'
