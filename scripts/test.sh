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
# The race detector needs cgo and a C compiler.
need gcc || apt_install gcc

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi

echo "== go vet (CGO_ENABLED=0: the default build is pure Go)"
CGO_ENABLED=0 go vet ./...
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
