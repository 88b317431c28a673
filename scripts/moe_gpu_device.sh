#!/usr/bin/env bash
# GPU MoE dispatch/combine (moe/gpu) on a machine with 2 or 4 NVLink GPUs:
# build, check, benchmark against NCCL, in one command.
#
#   scripts/moe_gpu_device.sh build             # HERE (with Go): bin/moe_gpu/ and bin/moe_gpu.tar.gz
#   scripts/moe_gpu_device.sh [run] [COUNT...]  # THERE (no Go needed): runs bin/moe_gpu/ (unpacked
#                                               # from bin/moe_gpu.tar.gz when that is all that came)
#
# COUNT is a GPU count steps deepep and anchor run on, 2 or 4 (default: 2,
# and 4 too where the machine has 4 GPUs; GPUS="2 4" does the same as
# arguments); a count above the machine's GPUs is skipped, named.
#
# The GPU machine needs the NVIDIA driver and NVRTC (the binaries are pure
# Go and load both at run time) and, for the anchor, PyTorch with NCCL. In
# order, with a log per step:
#   1. nvidia-smi and the topology;
#   2. test: the package tests (moe/gpu), GPU cases required
#      (RDMACTOR_REQUIRE_GPU=1): every round checked bit for bit against
#      package moe's layout and a Go emulation, edge cases included;
#   3. small: examples/moe -device gpu (it hands the run to examples/moe_gpu
#      beside it) as 2 processes (rdmarun, CUDA IPC) with an
#      odd hidden size, Zipf routing and dropped slots, bf16 and FP8; and
#      as 2 goroutine ranks;
#   4. deepep: DeepEP's sizes (hidden 7168, top-8, 256 experts; 128 tokens
#      normal and low latency, 4096 normal), checked, then timed, as COUNT
#      processes (rdmarun -np COUNT), for each COUNT;
#   5. sweep: the DeepEP sizes again with smaller grids (2 GPUs);
#   6. copy: what copy kernels move between GPUs 0 and 1, pushing and
#      pulling, one way and both ways, against cudaMemcpyPeer
#      (bench/nvlink/copybw.cu, built here with nvcc; skipped, named, where
#      there is no nvcc), at the normal dispatch's bytes; then all-to-alls
#      of copy kernels on each COUNT, pushing and pulling with several
#      load forms, at the low-latency and the normal dispatch's bytes per
#      pair (bench/nvlink/a2a.cu);
#   7. anchor: NCCL all_to_all_single (PyTorch) on COUNT GPUs of the same
#      bytes per peer pair as step 4 moved on COUNT, and of the issue's
#      4096x7168 and 128x7168, for each COUNT; then the copy engines'
#      all-to-all of the same bytes (the peer copy anchor);
#   8. a summary: every step's status, then one table per COUNT with
#      rdmactor and NCCL side by side.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0
# TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1, set by
# scripts/lib/device.sh) for every command; nothing here creates multicast
# objects.
#
# Environment: STEPS (default "test small deepep sweep copy anchor"); ITERS (timed
# rounds, default 30); OUT, if set, receives run.log and logs.tar.gz.
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."
. scripts/lib/device.sh # bundle, unpack, tee_run, require, gpu_info, step, has, summary_table, finish

if [ "${1:-}" = "build" ]; then
  set -e
  bundle bin/moe_gpu gpumoe:./moe/gpu -- ./examples/moe ./examples/moe_gpu ./cmd/rdmarun
fi

[ "${1:-}" = "run" ] && shift
counts=${GPUS:-$*}
unpack bin/moe_gpu gpumoe.test
tee_run MOE_GPU_TEED "$@"

export RDMACTOR_REQUIRE_GPU=1 RDMACTOR_REQUIRE_GPUS=1
export RDMACTOR_GPU_CASE_TIMEOUT=${RDMACTOR_GPU_CASE_TIMEOUT:-10s}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/rdmactor-cache}
STEPS=${STEPS:-test small deepep sweep copy anchor}
ITERS=${ITERS:-30}
logs=$(mktemp -d)
summary=()
B=bin/moe_gpu
require "$B" gpumoe.test moe moe_gpu rdmarun

gpu_info
. scripts/gpu_counts.sh # counts, fits

if has test; then
  step test 60 "$B/gpumoe.test" -test.v -test.count=1 -test.failfast -test.timeout=55s
fi
if has small; then
  # through examples/moe -device gpu, which hands the run to moe_gpu beside it
  step small-processes 35 "$B/rdmarun" -np 2 -timeout 32s "$B/moe" -device gpu -hidden 1001 -tokens 300 -ll-tokens 64 \
    -experts 32 -topk 8 -skew zipf -drop 0.1 -fp8 both -iters 5 -warmup 1 -timeout 30s
  step small-goroutines 35 "$B/moe_gpu" -local 2 -tokens 512 -ll-tokens 128 -fp8 both -iters 5 -warmup 1 -timeout 30s
fi
if has deepep; then
  for n in $counts; do
    fits "$n" || continue
    lim=$((50 + 10 * n))
    step "deepep-${n}gpu" $((lim + 10)) "$B/rdmarun" -np "$n" -timeout "$((lim + 5))s" "$B/moe_gpu" -deepep -fp8 both -figures \
      -iters "$ITERS" -warmup 5 -timeout "${lim}s"
  done
fi
if has sweep; then
  # Tuning: the normal mode at 4096 tokens and the low-latency mode at 128
  # with smaller grids (2 goroutine ranks, no check).
  sw=("$B/moe_gpu" -local 2 -hidden 7168 -topk 8 -experts 256 -check=false -iters 10 -warmup 2 -timeout 30s)
  step sweep-blocks66 35 "${sw[@]}" -tokens 4096 -mode normal -blocks 66
  step sweep-blocks33 35 "${sw[@]}" -tokens 4096 -mode normal -blocks 33
  step sweep-ll-blocks66 35 "${sw[@]}" -tokens 128 -ll-tokens 128 -mode ll -fp8 both -blocks 66
fi
if has copy; then
  if command -v nvcc >/dev/null 2>&1; then
    cb=$(mktemp -d)/copybw
    step copy-build 120 nvcc -arch=sm_90 -O3 -o "$cb" bench/nvlink/copybw.cu
    [ -x "$cb" ] && step copy 60 "$cb" 58720256
    ab=$(dirname "$cb")/a2a
    step a2a-build 120 nvcc -arch=sm_90 -O3 -o "$ab" bench/nvlink/a2a.cu
    for n in $counts; do
      fits "$n" || continue
      # bytes per pair: the low-latency dispatch's on 4 GPUs (about 116 of
      # 128 rows of 14336 B), and the 4096-token normal dispatch's on 4
      [ -x "$ab" ] && step "a2a-${n}gpu" 60 "$ab" "$n" 1658880 53125120
    done
  else
    echo "== copy: skipped, no nvcc on this machine"
  fi
fi
if has anchor; then
  for n in $counts; do
    fits "$n" || continue
    # The same bytes per peer pair as step deepep moved on n GPUs
    # (rows_per_pair x row elements; an FP8 row is 7168 e4m3 bytes + 56
    # scales = 3696 bf16 elements), and the issue's anchors.
    shapes="4096x7168,128x7168"
    if [ -f "$logs/deepep-${n}gpu.log" ]; then
      for f in $(grep -E '^(\[[0-9]+\] )?moe_.*_rows_per_pair:' "$logs/deepep-${n}gpu.log" | sed -E 's/^(\[[0-9]+\] )?(moe_[a-z_0-9]+)_rows_per_pair: ([0-9.]+).*/\2=\3/'); do
        rows=$(printf '%.0f' "${f#*=}")
        [ "$rows" -gt 0 ] || continue
        shapes="$shapes,${rows}x7168"                          # bf16 rows (combine returns bf16)
        [[ "$f" == *_fp8* ]] && shapes="$shapes,${rows}x3696" # FP8 dispatch: the same bytes
      done
    fi
    shapes=$(echo "$shapes" | tr ',' '\n' | awk '!seen[$0]++' | paste -sd, -)
    step "anchor-${n}gpu" 150 python3 bench/nccl/moe_nccl_anchor.py --world "$n" --shapes "$shapes" --iters 50
  done
fi

summary_table
if [ -f "$logs/test.log" ]; then
  echo
  echo "-- moe/gpu tests: passed $(grep -c -- '--- PASS' "$logs/test.log"), failed $(grep -c -- '--- FAIL' "$logs/test.log"), skipped $(grep -c -- '--- SKIP' "$logs/test.log") (tests and subtests)"
  grep -E -- '--- (FAIL|SKIP)' "$logs/test.log" | head -20
fi
for f in "$logs"/small-*.log "$logs"/deepep-*.log "$logs"/sweep-*.log; do
  [ -f "$f" ] && grep -hE '^== moe|check|dispatch .* us' "$f" | sed "s|^|$(basename "$f" .log): |"
done
if [ -f "$logs/copy.log" ]; then
  echo
  echo "-- copy kernels between GPUs 0 and 1 (bench/nvlink/copybw.cu)"
  cat "$logs/copy.log"
fi
for f in "$logs"/a2a-*gpu.log; do
  [ -f "$f" ] || continue
  echo
  echo "-- copy kernels' all-to-all ($(basename "$f" .log), bench/nvlink/a2a.cu)"
  cat "$f"
done
for n in $counts; do
  dl="$logs/deepep-${n}gpu.log" al="$logs/anchor-${n}gpu.log"
  [ -f "$dl" ] || [ -f "$al" ] || continue
  echo
  echo "-- $n GPUs: rdmactor (moe/gpu, $n processes) against NCCL all_to_all_single on $n GPUs, GPU time in us (rdmactor: each phase behind a kernel, moe_gpu -timing kernel; NCCL: stream of ops / one op after a barrier)"
  python3 - "$dl" "$al" <<'PY' || grep -hE '^(moe_|ANCHOR)' "$dl" "$al" 2>/dev/null
import re, sys
fig, anc = {}, {}
for line in open(sys.argv[1]) if __import__("os").path.exists(sys.argv[1]) else []:
    m = re.match(r"^(?:\[\d+\] )?(moe_\S+): ([0-9.]+)", line)
    if m: fig[m.group(1)] = float(m.group(2))
for line in open(sys.argv[2]) if __import__("os").path.exists(sys.argv[2]) else []:
    m = re.match(r"^ANCHOR (\S+)=([0-9.]+)", line)
    if m: anc[m.group(1)] = float(m.group(2))
print(f"{'mode':<26} {'phase':<9} {'rdmactor':>9} {'GB/s':>7} {'of CE':>6} | {'NCCL same bytes':>22} {'ratio':>6} | {'issue anchor':>20}")
for key in sorted({k.rsplit('_', 2)[0] for k in fig if k.endswith('_dispatch_time')}):
    mode = key[len('moe_'):]
    rows = fig.get(key + '_rows_per_pair', 0)
    elems = 3696 if '_fp8' in key else 7168
    same = f"nccl_a2a_{round(rows)}x{elems}"
    issue = "nccl_a2a_4096x7168" if key.startswith('moe_normal_4096') else "nccl_a2a_128x7168"
    for ph in ("dispatch", "combine"):
        t = fig.get(f"{key}_{ph}_time")
        bw = fig.get(f"{key}_{ph}_bw", 0)
        s, o = anc.get(same + "_stream_us"), anc.get(same + "_single_us")
        if ph == "combine" and '_fp8' in key:  # combine returns bf16 rows
            same2 = f"nccl_a2a_{round(rows)}x7168"
            s, o = anc.get(same2 + "_stream_us"), anc.get(same2 + "_single_us")
        i1, i2 = anc.get(issue + "_stream_us"), anc.get(issue + "_single_us")
        ce = anc.get(f"ce_a2a_{round(rows)}x{7168 if ph == 'combine' else elems}_GBps")
        of_ce = f"{100 * bw / ce:.1f}%" if ce and bw else "-"
        fmt = lambda v: f"{v:.1f}" if v else "-"
        ratio = f"{min(s or 1e9, o or 1e9) / t:.2f}x" if t and (s or o) else "-"
        print(f"{mode:<26} {ph:<9} {fmt(t):>9} {bw:>7.1f} {of_ce:>6} | {fmt(s):>10} / {fmt(o):>9} {ratio:>6} | {fmt(i1):>9} / {fmt(i2):>8}")
    if fig.get(key + "_layout_time"):
        print(f"{mode:<26} {'(layout)':<9} {fig[key + '_layout_time']:>9.1f}   as a kernel of its own, in traced rounds (the dispatch above fuses it)")
print("ratio: the faster NCCL figure / rdmactor's (above 1: rdmactor faster).")
print("of CE: rdmactor's GB/s per rank against the copy engines' all-to-all of the same bytes per GPU pair")
print("(every GPU cuMemcpyAsync-ing its block to every other at once, bench/nccl/peer_copy.py).")
PY
  grep -h '^ANCHOR_' "$al" 2>/dev/null
done
finish
