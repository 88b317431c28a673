package actor

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
)

// A lost-peer error from the Comm (a put to the lost rank that raced with
// the loss notice, or the receive loop's poll) under gin.FailPeer makes
// that rank gone and no other: the node still asks the others.
func TestCommFailedFailPeerLosesOneRank(t *testing.T) {
	nodes := startInternal(t, 3)
	n := nodes[0]
	require.Equal(t, gin.FailPeer, n.Comm().PeerFailure())
	_, err := nodes[1].SpawnNamed(PropsFromFunc(func(c Context) {
		if p, ok := c.Message().(*inPing); ok {
			c.Respond(&inPing{N: p.N + 1})
		}
	}), "echo")
	require.NoError(t, err)
	_, err = nodes[2].SpawnNamed(PropsFromFunc(func(Context) {}), "silent")
	require.NoError(t, err)
	waiting := n.Root().RequestFuture(n.PID(2, "silent"), &inPing{}, 30*time.Second)
	time.Sleep(50 * time.Millisecond) // the request is out, its future recorded

	n.commFailed(&gin.PeerLostError{Rank: 2, Reason: "lost in a test"})

	require.ErrorIs(t, n.Gone(2), ErrRankGone)
	require.NoError(t, n.Gone(1), "rank 1 is not gone")
	start := time.Now()
	_, err = waiting.Result()
	require.ErrorIs(t, err, ErrDeadLetter, "the request pending towards rank 2")
	require.Less(t, time.Since(start), 5*time.Second)
	res, err := n.Root().RequestFuture(n.PID(1, "echo"), &inPing{N: 1}, 10*time.Second).Result()
	require.NoError(t, err)
	require.Equal(t, 2, res.(*inPing).N)
	require.True(t, errors.Is(n.Tell(n.PID(2, "x"), &inPing{}), ErrRankGone), "a later send to rank 2")
}
