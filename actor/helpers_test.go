package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/stretchr/testify/require"
)

// Messages of the tests.
type (
	ping struct {
		N    int
		Note string
	}
	pong struct {
		N    int
		From string // the sender PID the answering actor saw
	}
	unregistered struct{ X int }
)

func init() {
	actor.RegisterMessage[ping]()
	actor.RegisterMessage[pong]()
}

// startLocal starts n nodes as goroutines; they are closed when t ends.
func startLocal(t *testing.T, n int, cfg actor.Config) []*actor.Node {
	t.Helper()
	nodes, err := actor.StartLocal(context.Background(), n, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	return nodes
}

// echo answers ping with pong{N+1, sender}.
func echo(c actor.Context) {
	if p, ok := c.Message().(*ping); ok {
		from := ""
		if c.Sender() != nil {
			from = c.Sender().Address + "/" + c.Sender().Id
		}
		c.Respond(&pong{N: p.N + 1, From: from})
	}
}

// events collects what a node's EventStream publishes of type T.
func events[T any](t *testing.T, n *actor.Node) chan T {
	c := make(chan T, 100)
	sub := n.System().EventStream.Subscribe(func(e any) {
		if v, ok := e.(T); ok {
			select {
			case c <- v:
			default:
			}
		}
	})
	t.Cleanup(func() { n.System().EventStream.Unsubscribe(sub) })
	return c
}

// recv waits for a value on c.
func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out waiting for "+what)
	}
	var zero T
	return zero
}
