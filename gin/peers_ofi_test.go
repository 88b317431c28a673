//go:build ofi && cgo && linux

package gin_test

import (
	"testing"

	"github.com/rdmactor/rdmactor/internal/testutils"
)

// TestPeersRingOFI is the peer-set ring of goroutine ranks over libfabric's
// tcp provider: an Import there is the address-vector insert and the
// connection warm-up, so the counts prove no rank touched its non-peer.
func TestPeersRingOFI(t *testing.T) {
	testutils.OFIProvider(t, "tcp")
	runPeerRing(t, "ofi")
}

// TestPeersProcessRingOFI is the peer-set ring with 4 processes over
// libfabric's tcp provider.
func TestPeersProcessRingOFI(t *testing.T) {
	testutils.OFIProvider(t, "tcp")
	testutils.RunRanks(t, 4, "peersring", envPeersInner+"=ofi")
}
