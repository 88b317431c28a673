//go:build ofi && cgo && linux

package moe_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma"
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
			t.Setenv(ofi.EnvProvider, prov)
			p, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "probe"})
			if errors.Is(err, rdma.ErrNotSupported) {
				t.Skipf("libfabric provider %s not usable here: %v", prov, err)
			}
			if err != nil {
				t.Fatalf("open %s: %v", prov, err)
			}
			caps := p.Capabilities()
			p.Close()
			if !caps.StrongSignals || !caps.SignalAdd {
				t.Skipf("ofi over %s: strong signals %v, SignalAdd %v: package moe needs both", prov, caps.StrongSignals, caps.SignalAdd)
			}
			res := testutils.RunRanksOpts(t, launch.Options{NP: 3, Transport: ofi.Name, KillOnFailure: true,
				Env: []string{ofi.EnvProvider + "=" + prov, fmt.Sprintf("%s=%d", envTokens, scale(100, 30))}}, "moe")
			for _, r := range res {
				assert.Equal(t, 0, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
			}
		})
	}
}
