package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/gin"
)

// Request answers like RequestFuture, names a gone rank with ErrRankGone
// (before the send and while waiting), and ends with ctx.
func TestRequest(t *testing.T) {
	nodes := startLocal(t, 3, actor.Config{})
	for _, n := range nodes[1:] {
		_, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo")
		require.NoError(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n := nodes[0]

	res, err := n.Request(ctx, n.PID(1, "echo"), &ping{N: 41})
	require.NoError(t, err)
	assert.Equal(t, 42, res.(*pong).N)

	_, err = n.Request(ctx, n.PID(1, "nobody"), &ping{})
	require.ErrorIs(t, err, actor.ErrDeadLetter)

	_, err = n.Request(ctx, nil, &ping{})
	require.ErrorIs(t, err, gin.ErrBadArgument)
	_, err = n.Request(ctx, actor.NewPID(actor.AddressOf(7), "echo"), &ping{})
	require.ErrorIs(t, err, gin.ErrPeerOutOfRange)

	// An actor that never answers: ctx's end ends the request.
	_, err = nodes[1].SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "mute")
	require.NoError(t, err)
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	_, err = n.Request(short, n.PID(1, "mute"), &ping{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	cancelled, cancelNow := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancelNow() }()
	_, err = n.Request(cancelled, n.PID(1, "mute"), &ping{})
	require.ErrorIs(t, err, context.Canceled)

	// Pending towards rank 2 when it leaves: ErrRankGone, not a dead letter.
	_, err = nodes[2].SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "mute")
	require.NoError(t, err)
	errs := make(chan error, 1)
	go func() {
		_, err := n.Request(ctx, n.PID(2, "mute"), &ping{})
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond) // the request is on its way or waiting
	require.NoError(t, nodes[2].Close())
	select {
	case err := <-errs:
		require.ErrorIs(t, err, actor.ErrRankGone)
	case <-time.After(10 * time.Second): // a hang guard, not a timing
		t.Fatal("a request pending towards a closed rank did not fail")
	}
	_, err = n.Request(ctx, n.PID(2, "echo"), &ping{})
	require.ErrorIs(t, err, actor.ErrRankGone, "a request to a gone rank fails at once")

	// Ranks 0 and 1 still talk.
	_, err = n.Request(ctx, n.PID(1, "echo"), &ping{})
	require.NoError(t, err)
}
