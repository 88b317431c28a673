#!/usr/bin/env bash
# The whole test suite of rdmactor, as CI runs it (.ci/run calls this).
# It installs what it needs when missing, then checks formatting, vets,
# proves the default build is pure Go, runs staticcheck and the tests with
# the race detector. Usage: scripts/test.sh [go test flags...]
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
  if need apt-get; then
    [ -n "${_apt_updated:-}" ] || { apt-get update -qq >/dev/null; _apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
}

need go || { echo "test.sh: Go is required (https://go.dev/dl)"; exit 1; }
# A crash in libfabric's C code prints Go's traceback, not psm's one-frame
# backtrace and a .btr file (docs/ofi.md, Quirks).
export IPATH_NO_BACKTRACE=1
# The race detector needs cgo and a C compiler.
need gcc || apt_install gcc
# Open MPI's mpirun runs the examples in examples/mpirun (skipped without it).
need mpirun || apt_install openmpi-bin || echo "openmpi-bin could not be installed: the mpirun test skips"

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi

echo "== go vet (CGO_ENABLED=0: the default build is pure Go)"
CGO_ENABLED=0 go vet ./...
# The debug build checks every WQE in front of each provider (rdma.Checked).
CGO_ENABLED=0 go vet -tags rdmacheck ./transport/... ./gin/...
CGO_ENABLED=0 go build ./...

echo "== staticcheck"
SC_VERSION=v0.8.2
if ! need staticcheck; then
  GOFLAGS=-mod=mod go install "honnef.co/go/tools/cmd/staticcheck@${SC_VERSION}" >/dev/null 2>&1 || true
  export PATH="$PATH:$(go env GOPATH)/bin"
fi
if need staticcheck; then staticcheck ./...; else echo "staticcheck could not be installed; skipped"; fi

echo "== go test -race"
go test -race -timeout 20m "$@" ./...

echo "== fuzz: decoders of what arrives from other ranks, briefly"
# Seeded from valid inputs (f.Add); a longer run: -fuzztime 10m. Counts,
# not durations: a -fuzztime deadline can fail a run that found nothing
# (a race in Go's fuzzing coordinator at the deadline).
go test -run '^$' -fuzz '^FuzzDecodeBody$' -fuzztime 20000x ./actor
go test -run '^$' -fuzz '^FuzzStreamDecode$' -fuzztime 5000x ./actor
go test -run '^$' -fuzz '^FuzzChunks$' -fuzztime 20000x ./actor
go test -run '^$' -fuzz '^FuzzParseFrame$' -fuzztime 20000x ./mailbox
go test -run '^$' -fuzz '^FuzzDecodeBody$' -fuzztime 20000x ./internal/bootstrap/remote
go test -run '^$' -fuzz '^FuzzReadHello$' -fuzztime 20000x ./gin
go test -run '^$' -fuzz '^FuzzDecodeDescriptor$' -fuzztime 20000x ./transport/rdma/shm

echo "== ofi provider (libfabric, build tag ofi): vet and tests on tcp and sockets"
# The default build above stays pure Go; the ofi provider needs cgo and
# libfabric-dev (Debian: libfabric-dev >= 1.17).
[ -f /usr/include/rdma/fabric.h ] || apt_install libfabric-dev
if [ -f /usr/include/rdma/fabric.h ]; then
  go vet -tags ofi ./transport/...
  # Both with and without the race detector: -race changes the scheduling and
  # the stack layout, and a cgo bug can show in one build only.
  go test -race -tags ofi -timeout 10m "$@" ./transport/rdma/ofi/...
  go test -tags ofi -timeout 10m "$@" ./transport/rdma/ofi/...
  # The ofi twins of tests in the layers above (named *OFI): wake-ups, peer
  # sets, barrier fences and MoE across processes over libfabric tcp.
  go test -race -tags ofi -run 'OFI$' -timeout 10m "$@" ./gin/ ./barrier/ ./moe/ ./mailbox/
  go test -tags ofi -run 'OFI$' -timeout 10m "$@" ./gin/ ./barrier/ ./moe/ ./mailbox/
  # Two ranks in two network namespaces joined by a veth pair: created here,
  # removed on exit; skipped, saying why, where that is not permitted.
  . scripts/lib/netns.sh # veth_join
  ofi_netns() {
    local a=rdxa$$ b=rdxb$$ va=rva$$ vb=rvb$$ bin
    if ! command -v ip >/dev/null 2>&1; then echo "ofi netns test skipped: no ip(8) (iproute2)"; return 0; fi
    if ! ip netns add "$a" 2>/dev/null; then
      echo "ofi netns test skipped: cannot create network namespaces here (needs root or CAP_SYS_ADMIN)"; return 0
    fi
    trap 'ip netns del '"$a"' 2>/dev/null; ip netns del '"$b"' 2>/dev/null; rm -rf '"${TMPDIR:-/tmp}/rdx-ofi-$$" EXIT
    veth_join "$a" "$b" "$va" "$vb" 10.177.0
    mkdir -p "${TMPDIR:-/tmp}/rdx-ofi-$$"
    bin="${TMPDIR:-/tmp}/rdx-ofi-$$/ofi.test"
    go test -c -race -tags ofi -o "$bin" ./transport/rdma/ofi
    (cd transport/rdma/ofi && ip netns exec "$a" env RDMACTOR_OFI_NETNS="$a,$b" RDMACTOR_OFI_NETNS_IFACES="$va,$vb" \
      RDMACTOR_OFI_NETNS_HOST=10.177.0.1 "$bin" -test.run '^TestNetns$' -test.v -test.timeout 5m)
  }
  ofi_netns
else
  echo "libfabric-dev could not be installed: ofi tests skipped"
fi

echo "== Slurm: srun -n 4 on a one-node cluster started here (scripts/slurm.sh)"
# Debian's slurmctld, slurmd and munge in a temporary directory, about a
# minute with the install; skipped, saying why, without root or apt-get.
scripts/slurm.sh

# ---- Two hosts: the auto transport (transport/rdma/hybrid, docs/multihost.md) ----
# Mixed Comms in one process (host ids A, A, B, B: shm within, ofi between),
# then scripts/twohosts.sh: two network namespaces joined by a veth pair
# stand for two hosts, 2 ranks in each, running the examples unchanged.
if [ -f /usr/include/rdma/fabric.h ]; then
  echo "== auto transport (build tag ofi): mixed Comms, then two hosts in network namespaces"
  go test -race -tags ofi -timeout 15m "$@" ./transport/rdma/hybrid/...
  go test -tags ofi -timeout 15m "$@" ./transport/rdma/hybrid/...
  scripts/twohosts.sh
fi
# ---- end two hosts ----
