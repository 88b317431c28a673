//go:build ofi && cgo && linux

package testutils

import (
	"errors"
	"testing"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// OFIProvider selects libfabric provider prov for t (ofi.EnvProvider,
// restored when t ends) and returns the capabilities the ofi provider
// has over it, probed with a one-rank open; it skips t, naming why, when
// prov is not usable here.
func OFIProvider(t testing.TB, prov string) rdma.Capabilities {
	t.Helper()
	t.Setenv(ofi.EnvProvider, prov)
	p, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "probe"})
	if errors.Is(err, rdma.ErrNotSupported) {
		t.Skipf("libfabric provider %s not usable here: %v", prov, err)
	}
	if err != nil {
		t.Fatalf("open %s: %v", prov, err)
	}
	defer p.Close()
	return p.Capabilities()
}
