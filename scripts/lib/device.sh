# device.sh: the frame of the GPU device scripts (scripts/gpu_device.sh,
# scripts/moe_gpu_device.sh), sourced from the repository root after they
# set self (the script's own path). Built where Go is, run where the GPUs
# are, from binaries alone; each step's output is kept in a log.
#
# NVLink multicast stays off for every command (children inherit it);
# nothing these scripts run creates multicast objects.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# bundle DIR NAME:PKG... -- PKG...: empties DIR, builds into it the test
# binary NAME.test of each NAME:PKG and the commands PKG... (pure Go,
# linux/amd64, stripped), packs DIR into DIR.tar.gz, and exits.
bundle() {
  local dir=$1 t
  shift
  rm -rf "$dir" && mkdir -p "$dir"
  export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
  while [ "$1" != "--" ]; do
    t=$1
    go test -c -ldflags='-s -w' -o "$dir/${t%%:*}.test" "${t#*:}"
    shift
  done
  shift
  go build -ldflags='-s -w' -o "$dir/" "$@"
  tar -C "$dir" -czf "$dir.tar.gz" .
  ls -l "$dir/" "$dir.tar.gz"
  echo "carry $dir.tar.gz to the GPU machine and run scripts/$(basename "$self") there"
  exit 0
}

# unpack DIR MARKER: unpacks DIR.tar.gz into DIR where it is all that came
# or is newer than DIR/MARKER.
unpack() {
  if [ -f "$1.tar.gz" ] && { [ ! -x "$1/$2" ] || [ "$1.tar.gz" -nt "$1/$2" ]; }; then
    mkdir -p "$1" && tar -C "$1" -xzf "$1.tar.gz"
  fi
}

# tee_run VAR ARGS...: with OUT set, runs this script again with ARGS, its
# whole output also kept in $OUT/run.log, and exits with its status; VAR,
# exported, tells the run inside that it is the one.
tee_run() {
  local var=$1
  shift
  if [ -n "${OUT:-}" ] && [ -z "${!var:-}" ]; then
    export "$var=1"
    bash "$self" "$@" 2>&1 | tee "$OUT/run.log"
    exit "${PIPESTATUS[0]}"
  fi
}

# require DIR BIN...: exits 2, saying to build and carry DIR.tar.gz, where
# a BIN is not an executable in DIR.
require() {
  local dir=$1 b
  shift
  for b in "$@"; do
    [ -x "$dir/$b" ] || { echo "$dir/$b missing: run 'scripts/$(basename "$self") build' where Go is, and carry $dir.tar.gz"; exit 2; }
  done
}

# gpu_info: the machine, its GPUs and their topology; sets ngpu (the GPU
# count) and gpuname.
gpu_info() {
  echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname), $(nproc) cores"
  nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv,noheader
  echo "== topology"
  nvidia-smi topo -m 2>&1 | head -20
  ngpu=$(nvidia-smi -L | grep -c '^GPU')
  gpuname=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
}

# step NAME TIMEOUT CMD...: runs CMD under timeout(1), its output shown
# and kept in $logs/NAME.log (the caller sets logs), and adds NAME, its
# status (ok, FAIL(rc), TIMEOUT) and its seconds to the array summary, the
# name padded to $step_width.
step_width=${step_width:-22}
step() {
  local name=$1 limit=$2
  shift 2
  echo
  echo "== $name: $*"
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]} st=ok
  [ "$rc" -ne 0 ] && st="FAIL($rc)"
  [ "$rc" -eq 124 ] && st="TIMEOUT"
  summary+=("$(printf "%-${step_width}s %-10s %4ss" "$name" "$st" $((SECONDS - t0)))")
}

# has STEP: whether STEPS names STEP.
has() { [[ " $STEPS " == *" $1 "* ]]; }

# summary_table: the summary's title and every step's status.
summary_table() {
  echo
  echo "================ summary ($(date -u +%Y-%m-%d), $ngpu x $gpuname) ================"
  printf "%-${step_width}s %-10s %5s\n" step status time
  for s in "${summary[@]}"; do echo "$s"; done
}

# finish: keeps the logs in $OUT/logs.tar.gz where OUT is set, prints how
# many steps failed and exits 1 if any did.
finish() {
  local fails=0 s
  [ -n "${OUT:-}" ] && tar -C "$logs" -czf "$OUT/logs.tar.gz" . 2>/dev/null
  for s in "${summary[@]}"; do [[ "$s" == *" ok "* ]] || fails=$((fails + 1)); done
  echo "steps failed: $fails"
  exit $((fails > 0))
}
