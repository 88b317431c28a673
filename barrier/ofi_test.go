//go:build ofi && cgo && linux

package barrier_test

import (
	"testing"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// ofiProviders are the libfabric providers CI has.
var ofiProviders = []string{"tcp", "sockets"}

// ofiJob is newJob over the ofi provider with libfabric provider prov,
// or a skip naming why prov is not usable here.
func ofiJob(t *testing.T, prov string, n int, cfg gin.Config) *job {
	t.Helper()
	if caps := testutils.OFIProvider(t, prov); cfg.Require.StrongSignals && !caps.StrongSignals {
		t.Skipf("ofi over %s has no strong signals: FencePut relies on them", prov)
	}
	cfg.Transport = ofi.Name
	return newJob(t, n, cfg)
}

// TestFencePutOFI is TestFencePut over libfabric (fi_writemsg puts).
func TestFencePutOFI(t *testing.T) {
	for _, prov := range ofiProviders {
		t.Run(prov, func(t *testing.T) {
			const n = 3
			fencePutRounds(t, ofiJob(t, prov, n, gin.Config{Signals: barrier.Requirement(n, 1), Require: gin.Requirements{StrongSignals: true}}), testutils.Scale(100, 20))
		})
	}
}

// TestFenceGetOFI is TestFenceGet over libfabric, where a get is an
// fi_readmsg still in flight when Get returns: without the fence the
// check after the barrier reads blocks that have not landed.
func TestFenceGetOFI(t *testing.T) {
	for _, prov := range ofiProviders {
		for _, k := range kinds {
			t.Run(prov+"/"+k.name, func(t *testing.T) {
				const n = 3
				fenceGetRounds(t, ofiJob(t, prov, n, gin.Config{Signals: k.signals(n, 1)}), k, testutils.Scale(50, 10))
			})
		}
	}
}
