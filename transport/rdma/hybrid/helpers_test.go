//go:build ofi && cgo && linux

package hybrid_test

import (
	"errors"
	"testing"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// useTCP makes the ofi half libfabric's tcp provider on the loopback
// interface, and skips t, saying why, where it is not usable here.
func useTCP(t testing.TB) {
	t.Helper()
	t.Setenv(ofi.EnvProvider, "tcp")
	t.Setenv(ofi.EnvIface, "lo")
	p, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "probe"})
	if errors.Is(err, rdma.ErrNotSupported) {
		t.Skipf("libfabric tcp not usable here: %v", err)
	}
	if err != nil {
		t.Fatalf("open ofi tcp: %v", err)
	}
	p.Close()
}
