#!/usr/bin/env bash
# Benchmarks of rdmactor against anchors measured in the same run.
#
#  1. builds bin/rdmarun and bin/rdmabench and runs rdmabench as 2 ranks on
#     shm: put+signal one-way latency against the floor (Go copy + atomic
#     add on a shared mapping) and put bandwidth against single-core copy,
#     both measured by rdmabench in the same processes;
#  2. runs the Open MPI anchor, bench/mpi/rmabench.c, through
#     bench/mpi/rmabench.sh (which installs Open MPI with apt-get if
#     missing, and runs again with
#     OMPI_MCA_btl_vader_single_copy_mechanism=none where CMA is blocked):
#     its 2-rank figures, and its one-sided figures again over osc/sm;
#  3. prints both side by side: figure, rdmactor, anchor, anchor value, ratio.
#
# Usage: scripts/bench.sh [rdmabench flags, e.g. -quick]
# Environment: NO_MPI=1 skips the Open MPI anchor (NO_MPI=0 or unset runs
# it); OUT=dir keeps the raw outputs and the anchor's binary there
# (default: a temporary directory, removed at exit).
# Only ratios within one run mean anything on a shared or noisy host.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh # bench_out

bench_out

echo "== build"
go build -o bin/ ./cmd/rdmarun ./cmd/rdmabench

echo "== host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== rdmactor: bin/rdmarun -np 2 bin/rdmabench $*"
bin/rdmarun -np 2 bin/rdmabench "$@" | tee "$out/rdmactor.raw"
# rdmarun prefixes every line with "[rank] "; only rank 0 prints.
sed 's/^\[[0-9]*\] //' "$out/rdmactor.raw" >"$out/rdmactor.txt"

: >"$out/mpi.txt"
if [ "${NO_MPI:-0}" = 0 ]; then
  echo "== Open MPI anchor: bench/mpi/rmabench.sh 2:all 2:rma:sm"
  bench/mpi/rmabench.sh -o "$out" 2:all 2:rma:sm 2>&1 | tee "$out/mpi.txt" ||
    echo "== Open MPI anchor failed or not run (above): the table has no Open MPI rows"
else
  echo "== Open MPI anchor skipped (NO_MPI=$NO_MPI)"
fi

echo
echo "== side by side (ratio = rdmactor / anchor; latency: lower is better, bandwidth: higher is better)"
# Rows: rdmactor figure, anchor figure, where the anchor comes from.
rows='putsig_8B_one_way floor_8B_one_way rdmabench
putsig_8B_one_way rma_put_notify_8B_one_way_loadpoll mpi
putsig_8B_one_way osc_sm.rma_put_notify_8B_one_way_loadpoll mpi
putsig_8B_one_way rma_put_notify_8B_one_way mpi
putsig_8B_one_way p2p_pingpong_8B_half_rtt mpi
putsig_8B_one_way_p99 floor_8B_one_way_p99 rdmabench
putsig_64KiB_one_way floor_64KiB_one_way rdmabench
putsig_64KiB_one_way p2p_pingpong_64KiB_half_rtt mpi
put_1MiB_bw copy_1MiB_bw rdmabench
put_1MiB_bw floor_put_1MiB_bw rdmabench
put_1MiB_bw rma_put_1MiB_flush_bw mpi
put_1MiB_bw osc_sm.rma_put_1MiB_flush_bw mpi
put_1MiB_bw memcpy_1MiB_bw mpi
put_64MiB_bw copy_64MiB_bw rdmabench
put_64MiB_bw floor_put_64MiB_bw rdmabench
put_64MiB_bw memcpy_64MiB_bw mpi
copy_1MiB_bw memcpy_1MiB_bw mpi
copy_64MiB_bw memcpy_64MiB_bw mpi'
printf '%s\n' "$rows" | awk -v rb="$out/rdmactor.txt" -v mpi="$out/mpi.txt" '
  function load(file, tab,   line, name) {
    while ((getline line < file) > 0) {
      if (line ~ /^[A-Za-z_.0-9]+: [-0-9.e+]+ [^ ]+$/) {
        split(line, f, " "); name = f[1]; sub(/:$/, "", name)
        tab[name] = f[2]; unit[name] = f[3]
      }
    }
    close(file)
  }
  BEGIN {
    load(rb, R); load(mpi, M)
    printf "%-24s %14s   %-52s %14s %8s\n", "figure", "rdmactor", "anchor", "anchor value", "ratio"
  }
  {
    if (!($1 in R)) next
    src = ($3 == "mpi") ? "Open MPI " : "same run "
    if ($3 == "mpi") { if (!($2 in M)) next; a = M[$2] } else { if (!($2 in R)) next; a = R[$2] }
    printf "%-24s %9.3f %-4s   %-52s %9.3f %-4s %7.2fx\n", $1, R[$1], unit[$1], src $2, a, unit[$2], (a > 0 ? R[$1] / a : 0)
  }'
echo
grep '^# .*\(MISSED\|met\)' "$out/rdmactor.txt" | sed 's/^# */target: /' || true
