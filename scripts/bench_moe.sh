#!/usr/bin/env bash
# MoE dispatch/combine benchmarks (docs/moe.md): package moe's one-sided
# dispatch and combine against two baselines doing the same data movement,
# on this machine, in one invocation:
#
#  1. rdmactor: bin/moe (examples/moe) under the launcher, for each rank
#     count and size: the one-sided Handle (normal mode, and low-latency
#     mode up to 128 tokens) and, in the same run, package bench/twosided
#     (collective.AllToAllV: pack, counts, one bulk exchange). It writes
#     the job's routing to a CSV file (-write-routing).
#  2. Open MPI: examples/moe/mpi/moe_alltoallv.c, built with mpicc -O3
#     -march=native (installed with apt if missing), on the same routing
#     and token values: pack, MPI_Alltoall of counts, MPI_Alltoallv of
#     rows and routing; MPI_Alltoallv back and the float32 sum.
#  3. prints everything side by side: per phase time (slowest rank,
#     median over timed rounds) and ratio = baseline time / moe time
#     (above 1.00 moe is faster). For Open MPI on 2 ranks, the faster of
#     --bind-to core (the anchor's) and --bind-to none.
#
# Sizes are DeepEP's (hidden 7168, top-8, 256 experts, bf16) with 128 and
# 4096 tokens per rank, on 2 and 4 ranks; 2 ranks run as the Open MPI
# anchor runs (--bind-to core), 4 ranks share the 2 cores of this machine
# (--oversubscribe --bind-to none; rdmactor's waits then yield, as Open
# MPI's do when oversubscribed).
#
# Steps 1-2 run ROUNDS times (default 3), interleaved, and each figure is
# the median over rounds: on a shared host other processes' load comes and
# goes, and only figures taken close together compare.
#
# Usage: scripts/bench_moe.sh
# Environment: ROUNDS=n; ITERS, WARMUP (timed and untimed rounds per run,
# default 20 and 3); NP="2 4"; TOKENS="128 4096"; HIDDEN=7168;
# EXPERTS=256; TOPK=8; SKEW=uniform|zipf; NO_MPI=1 skips Open MPI; OUT=dir
# keeps the raw outputs (default: a temporary directory, removed at exit);
# QUICK=1 runs small sizes (hidden 1024, 512 tokens) in seconds; BIN=dir
# takes rdmarun and moe prebuilt from dir instead of building them into
# bin/ (for a host without Go: CGO_ENABLED=0 go build -o DIR/
# ./cmd/rdmarun ./examples/moe).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/bench.sh # bench_out, host, MEDIAN_AWK

rounds=${ROUNDS:-3}
iters=${ITERS:-20}
warmup=${WARMUP:-3}
nps=${NP:-2 4}
tokens_list=${TOKENS:-128 4096}
hidden=${HIDDEN:-7168}
experts=${EXPERTS:-256}
topk=${TOPK:-8}
skew=${SKEW:-uniform}
if [ -n "${QUICK:-}" ]; then
  tokens_list=${TOKENS:-128 512}
  hidden=${HIDDEN:-1024}
  experts=${EXPERTS:-64}
fi
bench_out

bin=${BIN:-}
if [ -z "$bin" ]; then
  echo "== build"
  go build -o bin/ ./cmd/rdmarun ./examples/moe
  bin=bin
fi
mpi=""
if [ -z "${NO_MPI:-}" ]; then
  if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
  fi
  mpicc -O3 -march=native -o "$out/moe_alltoallv" examples/moe/mpi/moe_alltoallv.c
  mpi="$out/moe_alltoallv"
  echo "# $(mpirun --version | head -1); mpicc -O3 -march=native"
fi

# rdmactor NP TOKENS ROUND
rdmactor() {
  local np=$1 t=$2 r=$3 modes=normal
  [ "$t" -le 128 ] && modes=normal,ll
  host
  echo "== rdmactor, $np ranks, $t tokens: $bin/moe -mode $modes (one-sided, and the AllToAllV baseline)"
  "$bin/rdmarun" -np "$np" "$bin/moe" -tokens "$t" -ll-tokens 128 -hidden "$hidden" -topk "$topk" -experts "$experts" \
    -skew "$skew" -mode "$modes" -iters "$iters" -warmup "$warmup" -figures \
    -write-routing "$out/route.$np.$t.csv" | sed 's/^\[[0-9]*\] //' | tee "$out/moe.$np.$t.$r.txt" | grep -v ': .* \(us\|GB/s\)$'
}

# openmpi NP TOKENS ROUND: into mpi.NP.TOKENS.ROUND.txt; when the ranks fit
# the cores, also with --bind-to none (mpinb.*): on a shared host a rank
# bound to a core another process keeps busy cannot move, and the table
# takes the faster of the two.
openmpi() {
  local np=$1 t=$2 r=$3
  if [ "$np" -gt "$(nproc)" ]; then
    mpirun1 "$np" "$t" "$r" mpi "--oversubscribe --bind-to none"
  else
    mpirun1 "$np" "$t" "$r" mpi "--bind-to core"
    mpirun1 "$np" "$t" "$r" mpinb "--bind-to none"
  fi
}

# mpirun1 NP TOKENS ROUND FILE BINDING
mpirun1() {
  local np=$1 t=$2 r=$3 f=$4 bind=$5
  local args=("$out/route.$np.$t.csv" "$hidden" "$experts" "$topk" "$iters" "$warmup")
  host
  echo "== Open MPI, $np ranks, $t tokens: moe_alltoallv (mpirun $bind)"
  # shellcheck disable=SC2086
  if ! mpirun --allow-run-as-root $bind -np "$np" "$mpi" "${args[@]}" >"$out/$f.$np.$t.$r.txt" 2>"$out/$f.$np.$t.$r.err"; then
    echo "== Open MPI failed; again with OMPI_MCA_btl_vader_single_copy_mechanism=none"
    # shellcheck disable=SC2086
    OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun --allow-run-as-root $bind -np "$np" "$mpi" "${args[@]}" \
      >"$out/$f.$np.$t.$r.txt" || true
  fi
  grep -h '^#\|total_time' "$out/$f.$np.$t.$r.txt" || true
}

for r in $(seq 1 "$rounds"); do
  echo "== round $r of $rounds"
  for np in $nps; do
    for t in $tokens_list; do
      rdmactor "$np" "$t" "$r"
      if [ -n "$mpi" ]; then openmpi "$np" "$t" "$r"; fi
    done
  done
done

echo
echo "== side by side: hidden $hidden, top-$topk, $experts experts, bf16, $skew routing; median over $rounds round(s) of each run's median of $iters rounds on the slowest rank"
echo "   ratio = baseline time / moe time: > 1 means moe's one-sided dispatch/combine is faster"
awk -v out="$out" -v rounds="$rounds" -v nps="$nps" -v toks="$tokens_list" -v hidden="$hidden" "$MEDIAN_AWK"'
  function cell(x) { return x == "" ? sprintf("%10s", "-") : sprintf("%10.1f", x) }
  function ratio(b, a) { return (a == "" || b == "" || a == 0) ? sprintf("%7s", "-") : sprintf("%6.2fx", b / a) }
  BEGIN {
    split(nps, NP, " "); split(toks, TK, " ")
    printf "%5s %6s %-22s %10s %10s %10s %9s %9s  %s\n", "ranks", "tokens", "phase (us)", "moe", "alltoallv", "Open MPI", "a2av/moe", "MPI/moe", "moe GB/s"
    for (i = 1; i in NP; i++) for (j = 1; j in TK; j++) {
      np = NP[i]; t = TK[j]; base = "moe." np "." t; mb = "mpi." np "." t
      p = t "tok_x" hidden "_bf16"
      split("dispatch combine total", PH, " ")
      for (k = 1; k <= 3; k++) {
        ph = PH[k]; lab = (ph == "total") ? "dispatch+combine" : ph
        a = med(base, "moe_normal_" p "_" ph "_time"); b = med(base, "a2av_normal_" p "_" ph "_time")
        c = med(mb, "mpi_normal_" p "_" ph "_time"); c2 = med("mpinb." np "." t, "mpi_normal_" p "_" ph "_time")
        if (c == "" || (c2 != "" && c2 < c)) c = c2
        bw = (ph == "total") ? "" : med(base, "moe_normal_" p "_" ph "_bw")
        printf "%5s %6s %-22s %s %s %s %9s %9s  %s\n", np, t, "normal " lab, cell(a), cell(b), cell(c), ratio(b, a), ratio(c, a), (bw == "" ? "" : sprintf("%.2f", bw))
      }
      for (k = 1; k <= 3; k++) {
        ph = PH[k]; lab = (ph == "total") ? "dispatch+combine" : ph
        a = med(base, "moe_ll_" p "_" ph "_time")
        if (a == "") continue
        bw = (ph == "total") ? "" : med(base, "moe_ll_" p "_" ph "_bw")
        printf "%5s %6s %-22s %s %10s %10s %9s %9s  %s\n", np, t, "low-latency " lab, cell(a), "", "", "", "", (bw == "" ? "" : sprintf("%.2f", bw))
      }
    }
  }'
