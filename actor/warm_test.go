package actor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/mailbox"
)

// While rank 1's receive loop lingers between messages it warms (it
// decodes the last message again and runs it through an actor of its own),
// and the receiving actor still gets each message exactly once.
func TestWarmDeliversNothing(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{Mailbox: mailbox.Config{WarmEvery: time.Millisecond}})
	if nodes[1].Comm().Oversubscribed() {
		t.Skip("the receive loop does not linger on an oversubscribed host")
	}
	var got atomic.Int64
	var last atomic.Int64
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*inPingExt); ok {
			got.Add(1)
			last.Store(int64(m.N))
		}
	}), "counter")
	require.NoError(t, err)
	const sends = 20
	for i := 1; i <= sends; i++ {
		require.NoError(t, nodes[0].Tell(nodes[0].PID(1, "counter"), &inPingExt{N: i}))
		time.Sleep(5 * time.Millisecond)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got.Load() < sends && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // more warms, which must deliver nothing
	assert.Equal(t, int64(sends), got.Load())
	assert.Equal(t, int64(sends), last.Load())
	assert.Greater(t, nodes[1].Mailbox().Stats().Warms, uint64(10), "the lingering loop should have warmed")
	assert.Zero(t, nodes[1].Mailbox().Stats().HandlerPanics)
}
