package gin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
)

// The default LSA team is the ranks of one host where hosts hold equal
// blocks of consecutive ranks, as NCCL's; the rail team is the ranks of
// one local index across hosts. shm reaches every goroutine rank of this
// process, so host ids alone change the teams here.
func TestTeamsFromHosts(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		lsa   int
	}{
		{[]string{"A", "A", "B", "B"}, 2},
		{[]string{"A", "A", "A", "A"}, 4},
		{[]string{"A", "B", "C", "D"}, 1},
		{[]string{"A", "B", "A", "B"}, 1}, // a host's ranks not consecutive
		{[]string{"A", "A", "A", "B"}, 1}, // hosts of unequal size
	} {
		comms, err := gin.NewLocalOnHosts(context.Background(), tc.hosts, gin.Config{Transport: "shm", Signals: 1})
		require.NoError(t, err)
		for r, c := range comms {
			local := 0
			for _, h := range tc.hosts {
				if h == tc.hosts[r] {
					local++
				}
			}
			require.Equal(t, local, c.LocalRanks(), "hosts %v rank %d", tc.hosts, r)
			require.Equal(t, gin.Team{Rank: r % tc.lsa, NRanks: tc.lsa, Stride: 1}, c.LSA(), "hosts %v rank %d", tc.hosts, r)
			require.Equal(t, gin.Team{Rank: r / tc.lsa, NRanks: 4 / tc.lsa, Stride: tc.lsa}, c.Rail(), "hosts %v rank %d", tc.hosts, r)
			require.NoError(t, c.Close())
		}
	}
}

// Without Config.Transport a job of one host runs shm (auto picks it).
func TestDefaultTransportOneHost(t *testing.T) {
	comms, err := gin.NewLocal(context.Background(), 2, gin.Config{Signals: 1})
	require.NoError(t, err)
	for _, c := range comms {
		require.Equal(t, "shm", c.Transport())
		require.NoError(t, c.Close())
	}
}
