package hybrid_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
)

// A job on one host is an shm job: Open returns the shm provider itself.
func TestOneHostIsShm(t *testing.T) {
	for _, hosts := range [][]string{nil, {"A", "A", "A"}} {
		p, err := rdma.Open(hybrid.Name, rdma.Config{Rank: 1, Size: 3, Job: "hyb-one", Hosts: hosts})
		require.NoError(t, err, "hosts %v", hosts)
		require.Equal(t, shm.Name, p.Name(), "hosts %v", hosts)
		require.NoError(t, p.Close())
	}
}

func TestHostsLength(t *testing.T) {
	_, err := rdma.Open(hybrid.Name, rdma.Config{Rank: 0, Size: 3, Job: "hyb-len", Hosts: []string{"A", "B"}})
	require.ErrorContains(t, err, "2 host ids for 3 ranks")
}

func TestSameHost(t *testing.T) {
	c := rdma.Config{Rank: 0, Size: 4, Hosts: []string{"A", "A", "B", "B"}}
	require.True(t, c.SameHost(0, 1))
	require.False(t, c.SameHost(1, 2))
	require.True(t, c.SameHost(2, 3))
	require.True(t, rdma.Config{Size: 2}.SameHost(0, 1), "unknown hosts are one host")
}
