package actor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/gin"
)

// Tell refuses, with an error, a PID that can name no actor of the job,
// where Root().Send would drop the message without a word.
func TestTellImpossibleTargets(t *testing.T) {
	n := startLocal(t, 2, actor.Config{})[0]
	require.ErrorIs(t, n.Tell(nil, &inPingExt{}), gin.ErrBadArgument)
	require.ErrorIs(t, n.Tell(actor.NewPID(actor.AddressOf(2), "x"), &inPingExt{}), gin.ErrPeerOutOfRange)
	require.ErrorIs(t, n.Tell(actor.NewPID(actor.AddressOf(100000), "x"), &inPingExt{}), gin.ErrPeerOutOfRange)
	err := n.Tell(actor.NewPID("host.invalid:8080", "x"), &inPingExt{})
	require.ErrorIs(t, err, gin.ErrPeerOutOfRange)
	require.Less(t, len(err.Error()), 200)
	require.NoError(t, n.Tell(n.PID(1, "nobody"), &inPingExt{}), "a rank of the job: delivery is not confirmed")
	require.NoError(t, n.Tell(actor.NewPID("nonhost", "nobody"), &inPingExt{}), "a local PID")
}

type inPingExt struct{ N int }

func init() { actor.RegisterMessage[inPingExt]() }
