#!/usr/bin/env bash
# rmabench.sh: build bench/mpi/rmabench.c with Debian's Open MPI and run it
# on this host, as scripts/bench.sh and scripts/bench_collectives.sh do.
#
# Usage: bench/mpi/rmabench.sh [-r REP_SECONDS] [-n REPS] [-o DIR] RUN...
#
# Each RUN is NP:MODES[:OSC], one mpirun of rmabench: NP ranks, MODES its
# modes (comma-separated: p2p, rma, barrier, coll, memcpy, all), OSC an
# osc component to select (--mca osc OSC; the figures then start with
# "osc_OSC."). Examples: 2:all (the 2-rank figures), 2:rma:sm (the
# one-sided figures over osc/sm instead of Open MPI 4.1's default
# osc/rdma), 4:barrier,coll. Ranks are bound to a core each when they fit
# the cores (--bind-to core); otherwise they share them (--oversubscribe
# --bind-to none, and Open MPI yields when idle).
#
# Installs Open MPI (openmpi-bin libopenmpi-dev) with apt-get when mpicc or
# mpirun is missing; exits 3 saying so when it cannot. The binary goes to
# DIR (default: a temporary directory, removed at exit). A run that fails
# is run again with OMPI_MCA_btl_vader_single_copy_mechanism=none (CMA,
# process_vm_readv, blocked in a sandbox), and so are the runs after it.
# Before each run a "# cpu busy" line shows how busy the host was: only
# figures taken on an otherwise idle host compare across runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rep='' reps='' dir=''
while getopts r:n:o: f; do
  case $f in
    r) rep=$OPTARG ;;
    n) reps=$OPTARG ;;
    o) dir=$OPTARG ;;
    *) echo "usage: $0 [-r rep_seconds] [-n reps] [-o dir] NP:MODES[:OSC]..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# = 0 ]; then echo "usage: $0 [-r rep_seconds] [-n reps] [-o dir] NP:MODES[:OSC]..." >&2; exit 2; fi

if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then
  sudo=
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  echo "# installing Open MPI: apt-get install openmpi-bin libopenmpi-dev"
  if ! command -v apt-get >/dev/null 2>&1 ||
    ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null; } ||
    ! command -v mpicc >/dev/null 2>&1; then
    echo "rmabench.sh: Open MPI is not installed (mpicc, mpirun) and apt-get could not install it (needs root and Debian's openmpi-bin, libopenmpi-dev): not run" >&2
    exit 3
  fi
fi

if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
mkdir -p "$dir"
bin=$dir/rmabench
if [ ! "$bin" -nt "$here/rmabench.c" ]; then
  mpicc -O2 -Wall -o "$bin" "$here/rmabench.c"
fi

# busy: the host's CPU busy share over one second, and the processes that
# used more than 20 % of a CPU over their lifetime.
busy() {
  local a b
  a=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
  sleep 1
  b=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat)
  echo "# cpu busy before run: $(echo "$a $b" | awk '{d = $3 - $1 + $4 - $2; printf "%.0f", (d > 0 ? 100 * ($3 - $1) / d : 0)}')%" \
    "$(ps -eo pcpu=,comm= | awk '$1 > 20 {printf "[%s %s%%] ", $2, $1}')"
}

echo "# $(mpirun --version | head -1); $(nproc) cores; single_copy=${OMPI_MCA_btl_vader_single_copy_mechanism:-default (cma)}"
flags=()
if [ -n "$rep" ]; then flags+=(-r "$rep"); fi
if [ -n "$reps" ]; then flags+=(-n "$reps"); fi
rc=0
for spec in "$@"; do
  IFS=: read -r np modes osc <<<"$spec"
  args=(--allow-run-as-root -np "$np")
  if [ "$np" -le "$(nproc)" ]; then args+=(--bind-to core); else args+=(--oversubscribe --bind-to none); fi
  prog=("$bin" "${flags[@]}")
  if [ -n "$osc" ]; then args+=(--mca osc "$osc"); prog+=(-p "osc_$osc."); fi
  IFS=, read -r -a m <<<"$modes"
  busy
  echo "# mpirun ${args[*]} rmabench ${prog[*]:1}${prog[1]:+ }${m[*]}"
  if mpirun "${args[@]}" "${prog[@]}" "${m[@]}"; then continue; fi
  if [ "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" = none ]; then rc=1; continue; fi
  echo "# that run failed; again with OMPI_MCA_btl_vader_single_copy_mechanism=none, as the runs after it"
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  mpirun "${args[@]}" "${prog[@]}" "${m[@]}" || rc=1
done
exit "$rc"
