#!/usr/bin/env bash
# Barrier and collective benchmarks of rdmactor against Open MPI over
# shared memory, on this machine, in one invocation:
#
#  1. builds bin/rdmarun, bin/barrier and bin/collectives and runs, for 2
#     and 4 ranks under the launcher, examples/barrier (flat and
#     dissemination barriers) and examples/collectives -anchor (the
#     anchor's all-reduce and all-to-all figures), with the anchor's method
#     (0.4 s repetitions, median of 5, slowest rank). Like mpirun, the
#     examples pin 2 ranks to a core each and spin (-bind auto, -idle
#     auto), and leave 4 ranks on 2 cores unbound, yielding when idle;
#  2. runs the Open MPI anchor (../shared/anchors/run_mpi_anchor.sh, which
#     installs Open MPI with apt if missing): 2-rank figures and the 4-rank
#     barrier; again with OMPI_MCA_btl_vader_single_copy_mechanism=none if
#     CMA is blocked;
#  3. since the anchor gives all-reduce and all-to-all for 2 ranks only,
#     builds the anchor's own source with another main (its bench(),
#     k_allreduce and k_alltoall, unchanged) and runs those figures on 4
#     ranks as the anchor runs its 4-rank barrier (--oversubscribe
#     --bind-to none: Open MPI then yields when idle);
#  4. prints everything side by side. ratio = Open MPI time / rdmactor
#     time (for bandwidths: rdmactor / Open MPI): above 1.00 rdmactor is
#     faster.
#
# Steps 1-3 run ROUNDS times (default 1), interleaved, and each figure is
# the median over rounds: on a shared host other processes' load comes and
# goes, and only figures taken close together compare.
#
# Usage: scripts/bench_collectives.sh
# Environment: ROUNDS=n; REP_SECONDS, REPS (default 0.4, 5: the anchor's);
# NO_MPI=1 skips Open MPI; OUT=dir keeps the raw outputs (default: a
# temporary directory, removed at exit); IDLE2, IDLE4 (-idle of the 2- and
# 4-rank runs, default auto: spin when ranks fit the cores, yield
# otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh # bench_out, host, MEDIAN_AWK

rounds=${ROUNDS:-1}
rep=${REP_SECONDS:-0.4}
reps=${REPS:-5}
bench_out
anchor_dir=$(cd ../shared/anchors 2>/dev/null && pwd || true)

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

# mpi4 ROUND: the anchor's all-reduce and all-to-all figures on 4 ranks.
mpi4() {
  local r=$1
  cat >"$out/mpi_anchor_np.c" <<EOF
/* The anchor's 2-rank collective figures on any number of ranks: its own
 * source, harness and kernels, with this main instead of its own. */
#define main anchor_main
#include "$anchor_dir/mpi_anchor.c"
#undef main
int main(int argc, char **argv)
{
    char name[96];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    struct coll c = { xmalloc(4 * MiB), xmalloc(4 * MiB), 1 };
    report("allreduce_8B_sum_latency", bench(MPI_COMM_WORLD, k_allreduce, &c) * 1e6, "us");
    c.count = 4 * MiB / sizeof(double);
    double t = bench(MPI_COMM_WORLD, k_allreduce, &c);
    report("allreduce_4MiB_time", t * 1e3, "ms");
    report("allreduce_4MiB_algbw", 4 * MiB / t / 1e9, "GB/s");
    static const int tokens[] = { 128, 4096 };
    for (int i = 0; i < 2; i++) {
        size_t block = (size_t)tokens[i] * 7168 * 2;
        struct coll a = { xmalloc(block * nranks), xmalloc(block * nranks), (int)(block / 2) };
        t = bench(MPI_COMM_WORLD, k_alltoall, &a);
        snprintf(name, sizeof name, "alltoall_%dtok_x7168_bf16_time", tokens[i]);
        report(name, t * 1e3, "ms");
        snprintf(name, sizeof name, "alltoall_%dtok_x7168_bf16_algbw", tokens[i]);
        report(name, (double)block * nranks / t / 1e9, "GB/s");
        free(a.s); free(a.r);
    }
    MPI_Finalize();
    return 0;
}
EOF
  mpicc -O2 -o "$out/mpi_anchor_np" "$out/mpi_anchor_np.c"
  host
  echo "== Open MPI, 4 ranks: the anchor's all-reduce and all-to-all (mpirun --oversubscribe --bind-to none)"
  mpirun --allow-run-as-root --oversubscribe -np 4 --bind-to none "$out/mpi_anchor_np" | tee "$out/mpi4.$r.txt" ||
    echo "== Open MPI 4-rank run failed"
}

mpi() {
  local r=$1
  host
  echo "== Open MPI anchor: sh $anchor_dir/run_mpi_anchor.sh"
  if ! sh "$anchor_dir/run_mpi_anchor.sh" 2>&1 | tee "$out/mpi.$r.txt" || ! grep -q '^allreduce_8B' "$out/mpi.$r.txt"; then
    echo "== Open MPI anchor failed; again with OMPI_MCA_btl_vader_single_copy_mechanism=none"
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    sh "$anchor_dir/run_mpi_anchor.sh" 2>&1 | tee "$out/mpi.$r.txt" || true
  fi
  mpi4 "$r"
}

for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  rdmactor 2 "$r"
  if [ -z "${NO_MPI:-}" ] && [ -n "$anchor_dir" ]; then mpi "$r"; fi
  rdmactor 4 "$r"
done

echo
echo "== side by side (median over $rounds round(s); ratio = Open MPI time / rdmactor time, or rdmactor / Open MPI bandwidth: > 1 means rdmactor is faster)"
# Rows: ranks, rdmactor figure, rdmactor file, Open MPI figure, Open MPI file.
rows='2 barrier_2ranks_latency rdmactor2 barrier_2ranks_latency mpi
2 barrier_dissemination_2ranks_latency rdmactor2 barrier_2ranks_latency mpi
2 allreduce_8B_sum_latency rdmactor2 allreduce_8B_sum_latency mpi
2 allreduce_4MiB_time rdmactor2 allreduce_4MiB_time mpi
2 allreduce_4MiB_algbw rdmactor2 allreduce_4MiB_algbw mpi
2 alltoall_128tok_x7168_bf16_time rdmactor2 alltoall_128tok_x7168_bf16_time mpi
2 alltoall_128tok_x7168_bf16_algbw rdmactor2 alltoall_128tok_x7168_bf16_algbw mpi
2 alltoall_4096tok_x7168_bf16_time rdmactor2 alltoall_4096tok_x7168_bf16_time mpi
2 alltoall_4096tok_x7168_bf16_algbw rdmactor2 alltoall_4096tok_x7168_bf16_algbw mpi
4 barrier_4ranks_oversubscribed_latency rdmactor4 barrier_4ranks_oversubscribed_latency mpi
4 barrier_dissemination_4ranks_oversubscribed_latency rdmactor4 barrier_4ranks_oversubscribed_latency mpi
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
