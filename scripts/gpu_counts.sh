# gpu_counts.sh: the GPU counts of a device script's run, sourced by
# scripts/gpu_device.sh and scripts/moe_gpu_device.sh after they set
# ngpu (the machine's GPUs) and counts (their arguments or GPUS).
#
# counts: the GPU counts the multi-GPU steps run on, 2 or 4; default 2,
# and 4 too where the machine has 4 GPUs.
if [ -z "$counts" ]; then
  counts=2
  [ "$ngpu" -ge 4 ] && counts="2 4"
fi
for n in $counts; do
  case $n in 2 | 4) ;; *) echo "GPU count $n: 2 or 4"; exit 2 ;; esac
done

# fits N: whether this machine has N GPUs (it says so when not).
fits() {
  [ "$ngpu" -ge "$1" ] && return 0
  echo "== $1 GPUs: this machine has $ngpu; skipped"
  return 1
}
