package actorsys

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/require"
)

func TestNewCompactsTheRegistry(t *testing.T) {
	sys := New()
	defer sys.Shutdown()
	require.Len(t, sys.ProcessRegistry.LocalPIDs.LocalPIDs, registryBuckets)
	// What the constructor registered is still found.
	for _, id := range []string{"deadletter", "eventstream"} {
		_, ok := sys.ProcessRegistry.GetLocal(id)
		require.True(t, ok, id)
	}
	// Spawned actors and futures register, answer and go away.
	echo := actor.PropsFromFunc(func(c actor.Context) {
		if s, ok := c.Message().(string); ok {
			c.Respond(s + "!")
		}
	})
	for i := range 100 {
		pid := sys.Root.Spawn(echo)
		res, err := sys.Root.RequestFuture(pid, "hi", 5*time.Second).Result()
		require.NoError(t, err, i)
		require.Equal(t, "hi!", res)
		require.NoError(t, sys.Root.StopFuture(pid).Wait())
		_, ok := sys.ProcessRegistry.GetLocal(pid.Id)
		require.False(t, ok, "%s stays registered after its stop", pid.Id)
	}
}
