#!/usr/bin/env bash
# GPU transport checks (transport/gpu) on a machine with NVIDIA GPUs.
#
#   scripts/gpu_device.sh build             # HERE (with Go): builds bin/gpu/ and bin/gpu.tar.gz
#   scripts/gpu_device.sh [run] [COUNT...]  # THERE (no Go needed): runs bin/gpu/ (unpacked
#                                           # from bin/gpu.tar.gz when that is all that came)
#
# COUNT is a GPU count the multi-GPU steps run on, 2 or 4 (default: 2, and
# 4 too where the machine has 4 GPUs; GPUS="2 4" does the same as
# arguments); a count above the machine's GPUs is skipped, named.
#
# The GPU machine needs the NVIDIA driver (libcuda.so.1) and NVRTC
# (libnvrtc.so.*, from a CUDA toolkit or the nvidia-cuda-nvrtc wheel); the
# binaries are pure Go (CGO_ENABLED=0) and load both at run time. On it the
# script runs, in order:
#   1. nvidia-smi -L and the GPU topology (NVLink or PCIe between GPUs);
#   2. each test binary with -test.v (a GPU test that would skip fails here:
#      RDMACTOR_REQUIRE_GPU=1; the 2-GPU tests are required on 2+ GPUs);
#   3. the examples: gpu_barrier on the LSA path on each COUNT of GPUs
#      (ranks as goroutines, then as processes), gpu_putsignal on the LSA
#      path (2 GPUs), and both on the proxy path (2 processes on one GPU);
#   4. the benchmarks (2 GPUs), with their anchors measured in the same
#      process (cuMemcpyPeerAsync, a raw peer-store kernel), and the NCCL
#      anchor (bench/nccl/nccl_anchor.py, PyTorch) on each COUNT;
#   5. a summary: every step's status, then one table per COUNT with
#      rdmactor's figures and NCCL's side by side, then the benchmarks.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# NVSHMEM_DISABLE_NVLS=1) for every command, and nothing here creates multicast objects.
#
# Environment: STEPS (default "tests examples bench anchor") picks steps;
# TESTRUN narrows the gpu tests (-test.run); TESTLIMIT (s, default 480)
# bounds them; RDMACTOR_GPU_CASE_TIMEOUT (default 60s) bounds each case;
# BENCHTIME (default 200ms); OUT, if set, receives logs.tar.gz of every log.
set -uo pipefail
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$self")/.."
step_width=28
. scripts/lib/device.sh # bundle, unpack, tee_run, require, gpu_info, step, has, summary_table, finish

if [ "${1:-}" = "build" ]; then
  set -e
  bundle bin/gpu gpu:./transport/gpu cuda:./transport/gpu/cuda jit:./transport/gpu/jit ring:./transport/gpu/ring \
    -- ./examples/gpu_putsignal ./examples/gpu_barrier ./cmd/rdmarun
fi

[ "${1:-}" = "run" ] && shift
counts=${GPUS:-$*}
unpack bin/gpu gpu.test
tee_run GPU_DEVICE_TEED "$@"

export RDMACTOR_REQUIRE_GPU=1
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/rdmactor-cache}
STEPS=${STEPS:-tests examples bench anchor}
BENCHTIME=${BENCHTIME:-200ms}
logs=$(mktemp -d)
summary=()
require bin/gpu gpu.test cuda.test jit.test ring.test gpu_putsignal gpu_barrier rdmarun

gpu_info
[ "$ngpu" -ge 2 ] && export RDMACTOR_REQUIRE_GPUS=1
. scripts/gpu_counts.sh # counts, fits
ls /usr/local/cuda*/lib64/libnvrtc.so* 2>/dev/null | head -3

if has tests; then
  step test-ring 120 bin/gpu/ring.test -test.v -test.count=1
  step test-cuda 120 bin/gpu/cuda.test -test.v -test.count=1
  step test-jit 120 bin/gpu/jit.test -test.v -test.count=1
  step test-gpu "${TESTLIMIT:-480}" bin/gpu/gpu.test -test.v -test.count=1 -test.timeout="$((${TESTLIMIT:-480} - 10))s" ${TESTRUN:+-test.run="$TESTRUN"}
fi

if has examples; then
  for n in $counts; do
    fits "$n" || continue
    if [ "$n" -eq 2 ]; then
      step putsignal-lsa-2gpu 60 bin/gpu/gpu_putsignal -local 2 -path lsa -iters 2000 -bytes 8
      step putsignal-lsa-2gpu-64KiB 60 bin/gpu/gpu_putsignal -local 2 -path lsa -iters 200 -bytes 65536
    fi
    step "barrier-lsa-${n}gpu" 60 bin/gpu/gpu_barrier -local "$n" -path lsa -rounds 2000
    step "barrier-lsa-${n}proc" 90 bin/gpu/rdmarun -np "$n" -timeout 80s bin/gpu/gpu_barrier -path lsa -rounds 2000
  done
  # Two processes on ONE GPU (time-sliced kernels), then one per GPU where there are two.
  step putsignal-proxy-2proc-1gpu 90 bin/gpu/rdmarun -np 2 -timeout 80s bin/gpu/gpu_putsignal -path proxy -device 0 -iters 200 -bytes 8
  step barrier-proxy-2proc-1gpu 90 bin/gpu/rdmarun -np 2 -timeout 80s bin/gpu/gpu_barrier -path proxy -device 0 -rounds 100
  step putsignal-proxy-2goroutines-1gpu 60 bin/gpu/gpu_putsignal -local 2 -path proxy -device 0 -iters 2000 -bytes 8
  if [ "$ngpu" -ge 2 ]; then
    step putsignal-proxy-2proc-2gpu 90 bin/gpu/rdmarun -np 2 -timeout 80s bin/gpu/gpu_putsignal -path proxy -iters 2000 -bytes 8
  fi
fi

if has bench; then
  step bench 420 bin/gpu/gpu.test -test.run='^$' -test.bench='LSAPut|LSAPingPong|Proxy' -test.benchtime="$BENCHTIME" -test.timeout=410s
fi

if has anchor; then
  for n in $counts; do
    fits "$n" && step "nccl-anchor-${n}gpu" 180 python3 bench/nccl/nccl_anchor.py --world "$n"
  done
fi

# figure LOG PATTERN: the first figure of LOG's lines matching PATTERN,
# rank 0's where ranks print (the text after "per barrier"/"round trip").
figure() {
  [ -f "$1" ] || { echo "-"; return; }
  local line
  line=$(grep -hE "$2" "$1" | sed -E 's/^\[[0-9]+\] //' | grep -E '^rank 0/' | head -1)
  [ -z "$line" ] && line=$(grep -hE "$2" "$1" | head -1)
  case $2 in
  *barrier*) echo "$line" | sed -nE 's/.*; ([^ ]+) per barrier.*/\1/p' ;;
  *) echo "$line" | sed -nE 's/.*round trip ([^ ]+).*/\1/p' ;;
  esac | grep . || echo "-"
}
# anchor LOG NAME: NCCL figure NAME (us) from LOG.
anchor() { grep -hE "^ANCHOR $2=" "$1" 2>/dev/null | sed -E 's/.*=//' | grep . || echo "-"; }

# putbw MiB: the best overlapped-launch put bandwidth of BenchmarkLSAPut at
# that size, GB/s, with cuMemcpyPeerAsync's of the same case.
putbw() {
  grep -hE "^BenchmarkLSAPut/size=$1MiB/" "$logs/bench.log" 2>/dev/null | awk '
    {for (i = 2; i <= NF; i++) {if ($i == "ovl-GB/s") o = $(i-1); if ($i == "peer-GB/s") p = $(i-1)}
     if (o + 0 > best + 0) {best = o; bp = p}}
    END {if (best != "") printf "%s (peer %s)", best, bp; else print "-"}'
}

# table N: rdmactor and NCCL side by side on N GPUs.
table() {
  local n=$1 a="$logs/nccl-anchor-$1gpu.log"
  echo
  echo "-- $n GPUs: rdmactor beside NCCL ($(grep -h '^ANCHOR_INFO' "$a" 2>/dev/null | sed 's/^ANCHOR_INFO //'))"
  printf '%-44s %-16s | %s\n' "figure" "rdmactor" "NCCL (PyTorch), us"
  printf '%-44s %-16s | %s\n' "barrier, all $n ranks, goroutines (LSA)" "$(figure "$logs/barrier-lsa-${n}gpu.log" 'per barrier')" \
    "all_reduce 4 B: $(anchor "$a" nccl_allreduce_4B_stream_us) stream, $(anchor "$a" nccl_allreduce_4B_sync_us) with sync"
  printf '%-44s %-16s | %s\n' "barrier, all $n ranks, processes (LSA, IPC)" "$(figure "$logs/barrier-lsa-${n}proc.log" 'per barrier')" ""
  if [ "$n" -eq 2 ]; then
    printf '%-44s %-16s | %s\n' "put+signal ping-pong 8 B, round trip (LSA)" "$(figure "$logs/putsignal-lsa-2gpu.log" 'round trip')" \
      "send/recv 4 B ping-pong: $(anchor "$a" nccl_sendrecv_4B_roundtrip_us)"
    for sz in 1 256; do
      printf '%-44s %-16s | %s\n' "put $sz MiB, one per launch, GB/s (LSA)" "$(putbw $sz)" \
        "send $sz MiB, stream: $(anchor "$a" nccl_send_${sz}MiB_GBps) GB/s"
    done
  else
    printf '%-44s %-16s | %s\n' "ping-pong between ranks 0 and 1" "(2-GPU table)" \
      "send/recv 4 B ping-pong: $(anchor "$a" nccl_sendrecv_4B_roundtrip_us)"
  fi
}

summary_table
if [ -f "$logs/test-gpu.log" ]; then
  echo
  echo "-- gpu tests"
  echo "passed $(grep -c -- '--- PASS' "$logs/test-gpu.log"), failed $(grep -c -- '--- FAIL' "$logs/test-gpu.log"), skipped $(grep -c -- '--- SKIP' "$logs/test-gpu.log") (tests and subtests)"
  grep -E -- '--- (FAIL|SKIP)' "$logs/test-gpu.log" | head -20
fi
for n in $counts; do
  [ "$ngpu" -ge "$n" ] && table "$n"
done
if [ -f "$logs/bench.log" ]; then
  echo
  echo "-- benchmarks, 2 GPUs (this run; anchors measured in the same process)"
  grep -E '^Benchmark' "$logs/bench.log" | sed -E 's/-[0-9]+ +/ /' |
    awk '{printf "%-40s", $1; for (i = 3; i < NF; i += 2) if ($(i+1) != "ns/op" && $(i+1) != "B/op" && $(i+1) != "allocs/op") printf " %s %s", $i, $(i+1); print ""}'
fi
for f in "$logs"/putsignal-*.log "$logs"/barrier-*.log; do
  [ -f "$f" ] && grep -hE 'round trip|per barrier' "$f" | head -2 | sed "s|^|$(basename "$f" .log): |"
done
finish
