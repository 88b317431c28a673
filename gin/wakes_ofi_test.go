//go:build ofi && cgo && linux

package gin_test

import (
	"testing"

	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// TestNoLostWakeupsAcrossProcessesOFI is TestNoLostWakeupsAcrossProcesses
// over libfabric's tcp provider: every wait blocks on the CQ's wait fd,
// and a write that ends it must wake it within the wait's 5 s deadline,
// whatever length the wait's block has grown to.
func TestNoLostWakeupsAcrossProcessesOFI(t *testing.T) {
	testutils.OFIProvider(t, "tcp")
	runWakes(t, launch.Options{Transport: "ofi"})
}
