//go:build ofi && cgo && linux

package moe_test

import (
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
	"github.com/stretchr/testify/assert"
)

// TestProcessesOFI runs roleMoE's rounds as processes over the ofi
// provider (libfabric over loopback), per libfabric provider. The moe
// Handle needs strong signals with SignalAdd: ofi's cqdata strategy on
// providers that order RMA writes (tcp, sockets); a provider without them
// skips, naming why.
func TestProcessesOFI(t *testing.T) {
	for _, prov := range []string{"tcp", "sockets"} {
		t.Run(prov, func(t *testing.T) {
			caps := testutils.OFIProvider(t, prov)
			if !caps.StrongSignals || !caps.SignalAdd {
				t.Skipf("ofi over %s: strong signals %v, SignalAdd %v: package moe needs both", prov, caps.StrongSignals, caps.SignalAdd)
			}
			res := testutils.RunRanksOpts(t, launch.Options{NP: 3, Transport: ofi.Name, KillOnFailure: true,
				Env: []string{ofi.EnvProvider + "=" + prov, fmt.Sprintf("%s=%d", envTokens, testutils.Scale(100, 30))}}, "moe")
			for _, r := range res {
				assert.Equal(t, 0, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
			}
		})
	}
}
