//go:build ofi && cgo && linux

package ofi_test

import (
	"errors"
	"testing"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// skipIfNoProvider skips t, saying why, when libfabric has no usable
// fabric for prov here (STYLE.md 17: skip with the reason).
func skipIfNoProvider(t testing.TB, prov string) {
	t.Helper()
	p, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "probe"})
	if errors.Is(err, rdma.ErrNotSupported) {
		t.Skipf("libfabric provider %s not usable here: %v", prov, err)
	}
	if err != nil {
		t.Fatalf("open %s: %v", prov, err)
	}
	p.Close()
}
