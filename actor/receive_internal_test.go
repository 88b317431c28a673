package actor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
)

type inPing struct{ N int }

func init() { RegisterMessage[inPing]() }

func startInternal(t testing.TB, n int) []*Node {
	t.Helper()
	nodes, err := StartLocal(context.Background(), n, Config{})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	return nodes
}

func undeliverables(t *testing.T, n *Node) chan *UndeliverableEvent {
	c := make(chan *UndeliverableEvent, 16)
	sub := n.system.EventStream.Subscribe(func(e any) {
		if ev, ok := e.(*UndeliverableEvent); ok {
			c <- ev
		}
	})
	t.Cleanup(func() { n.system.EventStream.Unsubscribe(sub) })
	return c
}

func wait[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		require.FailNow(t, "timed out")
	}
	var zero T
	return zero
}

// Frames whose body is not a message this rank can decode: the receiving
// rank reports each (UndeliverableEvent with the reason) and tells the
// sending rank, which reports it too and fails the request at once; the
// next valid message is delivered as usual. Nothing crashes.
func TestUndecodableMessages(t *testing.T) {
	payload := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		require.NoError(t, err)
		return b
	}
	for _, tc := range []struct {
		name string
		body func(e *encoder, sender *PID) // writes the bad body into e.buf
		want error
	}{
		{"unknown type", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], fSender)
			e.str("sink")
			e.pid(s)
			e.str("example.com/nowhere.Type")
			e.buf = append(e.buf, payload(inPing{N: 1})...)
		}, ErrUnregistered},
		{"payload of another type", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], fSender)
			e.str("sink")
			e.pid(s)
			e.str("github.com/rdmactor/rdmactor/actor.inPing")
			e.buf = append(e.buf, payload("not a struct")...)
		}, ErrUndecodable},
		{"bytes after the message", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], fSender)
			e.str("sink")
			e.pid(s)
			e.str("github.com/rdmactor/rdmactor/actor.inPing")
			e.buf = append(e.buf, payload(inPing{N: 1})...)
			e.buf = append(e.buf, 0xc0)
		}, ErrUndecodable},
		{"unknown protobuf message", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], fSender|fProto)
			e.str("sink")
			e.pid(s)
			e.str("nowhere.Message")
		}, ErrUnregistered},
		{"truncated header", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], fSender)
			e.str("sink")
			e.str(s.Address)
			e.buf = append(e.buf, 200) // the sender id's length, then nothing
		}, ErrUndecodable},
		{"unknown flags", func(e *encoder, s *PID) {
			e.buf = append(e.buf[:0], 0x80)
		}, ErrUndecodable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := startInternal(t, 2)
			got := make(chan any, 4)
			_, err := nodes[1].SpawnNamed(PropsFromFunc(func(c Context) {
				if m, ok := c.Message().(*inPing); ok {
					got <- m
				}
			}), "sink")
			require.NoError(t, err)
			atReceiver, atSender := undeliverables(t, nodes[1]), undeliverables(t, nodes[0])

			// The bad frame comes with a request's future as sender.
			f := NewFuture(nodes[0].system, 10*time.Second)
			e := getEncoder()
			tc.body(e, f.PID())
			require.NoError(t, nodes[0].mb.Send(1, kindUser, e.buf))
			putEncoder(e)

			ev := wait(t, atReceiver)
			assert.ErrorIs(t, ev.Err, tc.want)
			t.Logf("receiver: %v", ev.Err)
			ev = wait(t, atSender)
			var re *RemoteError
			require.ErrorAs(t, ev.Err, &re)
			assert.Equal(t, 1, re.Rank)
			assert.Contains(t, re.Reason, tc.want.Error())
			if tc.name != "truncated header" && tc.name != "unknown flags" {
				// The sender was readable: its request fails at once.
				_, err = f.Result()
				assert.ErrorIs(t, err, ErrDeadLetter)
			}

			require.NoError(t, nodes[0].Tell(nodes[0].PID(1, "sink"), &inPing{N: 7}))
			assert.Equal(t, &inPing{N: 7}, wait(t, got))
			assert.Nil(t, nodes[0].Gone(1))
			assert.Nil(t, nodes[1].Gone(0))
		})
	}
}

// A frame that is not a frame at all (garbage in the ring, put through
// gin): the mailbox closes that pair, and the node treats the sending rank
// as gone: its watchers get TerminatedAddressTerminated, and the sender's
// later sends there fail.
func TestCorruptFrameMakesRankGone(t *testing.T) {
	nodes := startInternal(t, 2)
	_, err := nodes[0].SpawnNamed(PropsFromFunc(func(Context) {}), "victim")
	require.NoError(t, err)
	terminated := make(chan *Terminated, 1)
	watcher := nodes[1].Spawn(PropsFromFunc(func(c Context) {
		switch m := c.Message().(type) {
		case *PID:
			c.Watch(m)
			c.Respond(true)
		case *Terminated:
			terminated <- m
		}
	}))
	_, err = nodes[1].Root().RequestFuture(watcher, nodes[1].PID(0, "victim"), 10*time.Second).Result()
	require.NoError(t, err)

	// Rank 0 has sent nothing to rank 1 yet: its ring there starts at 0.
	c0, mb := nodes[0].comm, nodes[0].mb
	lay := mb.Layout()
	garbage := mb.Window().Bytes()[lay.StagingOffset(1) : lay.StagingOffset(1)+64]
	for i := range garbage {
		garbage[i] = 0xEE
	}
	x, err := c0.Context(0)
	require.NoError(t, err)
	require.NoError(t, x.Put(c0.World(), 1, mb.Window(), lay.InboxOffset(0), mb.Window(), lay.StagingOffset(1), 64,
		gin.SignalAdd(lay.FrameSignal(0), 1), gin.LocalNone))

	tm := wait(t, terminated)
	assert.Equal(t, TerminatedAddressTerminated, tm.Why)
	require.ErrorIs(t, nodes[1].Gone(0), ErrRankGone)
	assert.ErrorContains(t, nodes[1].Gone(0), "corrupt frame")
	require.Eventually(t, func() bool {
		return errors.Is(nodes[0].Tell(nodes[0].PID(1, "x"), &inPing{}), mailbox.ErrPairClosed)
	}, 10*time.Second, time.Millisecond)
}

// A future's PID, as target or sender, is made afresh and not cached: each
// is answered once, so an entry would never be hit, and a request stream
// would fill the caches up to maxCachedPIDs and clear them over and over.
// Actor PIDs are cached.
func TestFuturePIDsAreNotCached(t *testing.T) {
	n := &Node{addrs: []string{"rank0"}, targets: map[string]*PID{}, senders: map[string]map[string]*PID{}}
	for i := range 100 {
		id := []byte(fmt.Sprintf("%s%d", futurePrefix, i))
		p := n.localPID(id)
		assert.Equal(t, string(id), p.Id)
		assert.Equal(t, "rank0", p.Address)
		q := n.remotePID(wirePID{addr: []byte("rank1"), id: id})
		assert.Equal(t, string(id), q.Id)
		assert.Equal(t, "rank1", q.Address)
	}
	assert.Empty(t, n.targets, "future targets cached")
	assert.Empty(t, n.senders["rank1"], "future senders cached")

	a, b := n.localPID([]byte("pong")), n.localPID([]byte("pong"))
	assert.Same(t, a, b)
	c, d := n.remotePID(wirePID{addr: []byte("rank1"), id: []byte("ping")}), n.remotePID(wirePID{addr: []byte("rank1"), id: []byte("ping")})
	assert.Same(t, c, d)
	assert.Len(t, n.targets, 1)
	assert.Len(t, n.senders["rank1"], 1)
}
