#!/usr/bin/env bash
# srun -n 4 for real: a one-node Slurm cluster (Debian's slurmctld, slurmd
# and munge) in a temporary directory runs examples/putsignal, barrier and
# actors unchanged, the ranks taking their places from Slurm's variables
# (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_STEP_NODELIST; see
# internal/bootstrap/schedulers.go). Everything it starts is stopped and
# removed on exit. It needs root (the daemons run as root, munged as
# munge) and installs the packages when missing; where it cannot, it says
# so and exits 0. Usage: scripts/slurm.sh
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "slurm test skipped: $*"; exit 0; }

[ "$(id -u)" = 0 ] || skip "needs root to run slurmctld, slurmd and munged"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v srun >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "no apt-get to install slurmctld, slurmd, slurm-client and munge"
  apt-get update -qq >/dev/null || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null || skip "apt-get could not install slurmctld, slurmd, slurm-client and munge"
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/rdx-slurm-XXXXXX")
chmod 755 "$dir"
pids=()
stop() {
  # Only what this script started: the daemons run in the foreground as
  # its children, so that it can end and reap them.
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap stop EXIT

# munge, on a socket and key of its own (a copy of a fresh key).
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/bin"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chown -R munge:munge "$dir/munge"
chmod 700 "$dir/munge"
chmod 600 "$dir/munge/munge.key"
runuser -u munge -- munged --foreground --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/seed" --force >"$dir/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$dir/munge/munge.socket" ] && break; sleep 0.1; done

# One node, named after this host when its name resolves (ranks find rank
# 0 at the step's first node), with more CPUs than tasks allowed.
node=$(hostname -s)
getent hosts "$node" >/dev/null || node=localhost
base=$((20000 + $$ % 20000))
cat >"$dir/slurm.conf" <<EOF
ClusterName=rdx
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=rdx Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=YES
EOF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$dir/slurmd.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t | grep -q idle || { tail -20 "$dir/slurmctld.log" "$dir/slurmd.log"; echo "slurm: the node did not come up in 20 s"; exit 1; }

go build -o "$dir/bin/" ./examples/putsignal ./examples/barrier ./examples/actors

# The job secret, as any launcher other than rdmarun must provide it; srun
# passes the environment on. No RDMACTOR_RANK: Slurm's variables place
# the ranks.
RDMACTOR_JOB_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export RDMACTOR_JOB_SECRET
unset RDMACTOR_RANK RDMACTOR_WORLD_SIZE RDMACTOR_BOOTSTRAP
run() { # prog, pattern every rank's line or the output must match, count
  local out
  out=$(timeout 180 srun -n 4 --kill-on-bad-exit=1 "$dir/bin/$1" 2>&1) || { echo "$out"; echo "slurm: srun -n 4 $1 failed"; exit 1; }
  if [ "$(grep -c -- "$2" <<<"$out")" -lt "$3" ]; then
    echo "$out"; echo "slurm: srun -n 4 $1: want $3 lines matching '$2'"; exit 1
  fi
  echo "srun -n 4 $1: ok"
}
run putsignal 'via shm, verified' 4
run barrier '_latency:' 2
run actors 'matches a count by rank 0 alone' 1
