//go:build !(ofi && cgo && linux)

package hybrid_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
)

// A build without the ofi provider cannot reach other hosts: Open fails,
// naming every host and its ranks, with rdma.ErrNotSupported and what to
// build with.
func TestRefusesOtherHosts(t *testing.T) {
	_, err := rdma.Open(hybrid.Name, rdma.Config{Rank: 2, Size: 4, Job: "hyb-refuse", Hosts: []string{"A", "A", "B", "B"}})
	require.ErrorIs(t, err, rdma.ErrNotSupported)
	for _, want := range []string{`host "A": ranks [0 1]`, `host "B": ranks [2 3]`, "-tags ofi"} {
		require.ErrorContains(t, err, want)
	}

	// Through gin, with the default transport.
	_, err = gin.NewLocalOnHosts(context.Background(), []string{"A", "B"}, gin.Config{})
	require.ErrorIs(t, err, rdma.ErrNotSupported)
	require.ErrorContains(t, err, `host "B": ranks [1]`)
}
