package gin_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// envPeersInner names the provider the peersring role wraps in its
// counting provider: "shm" (the default) or "ofi".
const envPeersInner = "RDMACTOR_TEST_PEERS_INNER"

// rolePeersRing: a rank of a ring of processes, each listing only its two
// neighbours in Config.Peers, runs peerRing (puts, signals and a get to the
// neighbours; ErrNotPeer for the rank across the ring; nothing imported
// from or connected to it).
func rolePeersRing() error {
	inner := os.Getenv(envPeersInner)
	if inner == "" {
		inner = "shm"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	size, err := gin.SizeFromEnv()
	if err != nil {
		return err
	}
	me, err := strconv.Atoi(os.Getenv(gin.EnvRank)) // Peers is needed before Init
	if err != nil {
		return fmt.Errorf("%s: %w", gin.EnvRank, err)
	}
	c, err := gin.Init(ctx, gin.Config{Transport: countPrefix + inner, Signals: barrier.Requirement(size, 1), Peers: ringPeers(me, size)})
	if err != nil {
		return err
	}
	defer c.Close()
	return peerRing(ctx, c, countsOf(os.Getenv(gin.EnvJob), c.Rank()))
}

// TestPeersProcessRingShm is the peer-set ring with 4 processes on shm.
func TestPeersProcessRingShm(t *testing.T) {
	testutils.RunRanks(t, 4, "peersring", envPeersInner+"=shm")
}
