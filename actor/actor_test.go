package actor_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/mailbox"
)

func TestAddresses(t *testing.T) {
	assert.Equal(t, "rdmactor:3", actor.AddressOf(3))
	for _, tc := range []struct {
		pid  *actor.PID
		rank int
		ok   bool
	}{
		{actor.NewPID("rdmactor:0", "x"), 0, true},
		{actor.NewPID("rdmactor:12", "x"), 12, true},
		{actor.NewPID("rdmactor:-1", "x"), 0, false},
		{actor.NewPID("rdmactor:", "x"), 0, false},
		{actor.NewPID("127.0.0.1:8080", "x"), 0, false},
		{actor.NewPID("nonhost", "x"), 0, false},
		{nil, 0, false},
	} {
		r, ok := actor.RankOf(tc.pid)
		assert.Equal(t, tc.ok, ok, "%v", tc.pid)
		assert.Equal(t, tc.rank, r, "%v", tc.pid)
	}
}

// Requests across ranks: RequestFuture from the root, and Request/Respond
// between actors; the sender PID travels, so answers find their way back.
func TestRequestResponse(t *testing.T) {
	nodes := startLocal(t, 3, actor.Config{})
	for _, n := range nodes {
		_, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo")
		require.NoError(t, err)
	}
	for from, n := range nodes {
		for to := range nodes {
			res, err := n.Root().RequestFuture(n.PID(to, "echo"), &ping{N: 10 * to}, 10*time.Second).Result()
			require.NoError(t, err, "rank %d to rank %d", from, to)
			p := res.(*pong)
			assert.Equal(t, 10*to+1, p.N)
			assert.True(t, strings.HasPrefix(p.From, actor.AddressOf(from)+"/future"), "sender %q", p.From)
		}
	}

	// Actor to actor: rank 0's asker requests rank 2's echo and forwards
	// the answer out.
	got := make(chan *pong, 1)
	asker := nodes[0].Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *ping:
			c.Request(nodes[0].PID(2, "echo"), m)
		case *pong:
			got <- m
		}
	}))
	nodes[0].Root().Send(asker, &ping{N: 41})
	p := recv(t, got, "pong")
	assert.Equal(t, 42, p.N)
	assert.Equal(t, asker.Address+"/"+asker.Id, p.From)
}

// Many concurrent requesters on one rank into one actor on another.
func TestConcurrentRequests(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(echo), "echo")
	require.NoError(t, err)
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := g*each + i
				res, err := nodes[0].Root().RequestFuture(nodes[0].PID(1, "echo"), &ping{N: n}, 10*time.Second).Result()
				if !assert.NoError(t, err) || !assert.Equal(t, n+1, res.(*pong).N) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Messages keep their form (T or *T), headers cross, and protobuf
// messages cross unregistered.
func TestMessageForms(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	got := make(chan any, 10)
	headers := make(chan string, 10)
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case *actor.Started:
			return
		}
		got <- c.Message()
		h := ""
		if c.MessageHeader() != nil {
			h = c.MessageHeader().Get("trace")
		}
		headers <- h
	}), "sink")
	require.NoError(t, err)
	sink := nodes[0].PID(1, "sink")
	root := nodes[0].Root()
	root.Send(sink, ping{N: 1, Note: "value"})
	root.Send(sink, &ping{N: 2, Note: "pointer"})
	root.Send(sink, wrapperspb.String("protobuf"))
	root.Send(sink, &actor.MessageEnvelope{Header: map[string]string{"trace": "abc"}, Message: &ping{N: 4}})

	assert.Equal(t, ping{N: 1, Note: "value"}, recv(t, got, "value"))
	assert.Equal(t, &ping{N: 2, Note: "pointer"}, recv(t, got, "pointer"))
	assert.Equal(t, "protobuf", recv(t, got, "protobuf").(*wrapperspb.StringValue).GetValue())
	assert.Equal(t, &ping{N: 4}, recv(t, got, "envelope"))
	for range 3 {
		assert.Empty(t, recv(t, headers, "header"))
	}
	assert.Equal(t, "abc", recv(t, headers, "header"))
}

// A request to an actor that does not exist fails fast with
// ErrDeadLetter: DeadLetterResponse crosses back.
func TestDeadLetterResponse(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	start := time.Now()
	_, err := nodes[0].Root().RequestFuture(nodes[0].PID(1, "nobody"), &ping{}, 10*time.Second).Result()
	assert.ErrorIs(t, err, actor.ErrDeadLetter)
	assert.Less(t, time.Since(start), 2*time.Second)
}

// An unregistered type is reported at the sender: Tell returns the error,
// Send publishes UndeliverableEvent, and a request fails at once.
func TestUnregisteredAtSender(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(echo), "echo")
	require.NoError(t, err)
	target := nodes[0].PID(1, "echo")
	evs := events[*actor.UndeliverableEvent](t, nodes[0])

	err = nodes[0].Tell(target, &unregistered{X: 1})
	assert.ErrorIs(t, err, actor.ErrUnregistered)
	assert.ErrorContains(t, err, "unregistered")

	start := time.Now()
	_, err = nodes[0].Root().RequestFuture(target, &unregistered{X: 2}, 10*time.Second).Result()
	assert.ErrorIs(t, err, actor.ErrDeadLetter)
	assert.Less(t, time.Since(start), 2*time.Second)
	ev := recv(t, evs, "UndeliverableEvent")
	assert.ErrorIs(t, ev.Err, actor.ErrUnregistered)
	assert.Equal(t, target, ev.Target)
	assert.Equal(t, &unregistered{X: 2}, ev.Message)

	// The pair still works.
	res, err := nodes[0].Root().RequestFuture(target, &ping{N: 1}, 10*time.Second).Result()
	require.NoError(t, err)
	assert.Equal(t, 2, res.(*pong).N)
}

// A message larger than a frame crosses in pieces and arrives whole; one
// over MaxMessage is an error at the sender, found while encoding.
func TestLargeMessages(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{Mailbox: mailbox.Config{RingBytes: 64 << 10}, MaxMessage: 8 << 20})
	got := make(chan *blob, 4)
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if b, ok := c.Message().(*blob); ok {
			got <- b
		}
	}), "sink")
	require.NoError(t, err)
	target := nodes[0].PID(1, "sink")
	for _, size := range []int{32 << 10, 1 << 20, 8<<20 - 64} {
		want := &blob{Data: make([]byte, size)}
		for i := range want.Data {
			want.Data[i] = byte(i * 7)
		}
		require.NoError(t, nodes[0].Tell(target, want), "%d bytes", size)
		select {
		case b := <-got:
			require.Equal(t, want.Data, b.Data, "%d bytes", size)
		case <-time.After(30 * time.Second):
			t.Fatalf("a %d-byte message never arrived", size)
		}
	}
	// 2 GiB of address space, never touched: encoding stops at the limit.
	huge := &blob{Data: make([]byte, 2<<30)}
	start := time.Now()
	err = nodes[0].Tell(target, huge)
	require.ErrorIs(t, err, actor.ErrMessageTooLarge)
	require.Less(t, time.Since(start), 100*time.Millisecond, "the size was found late")
	// The pair still works.
	require.NoError(t, nodes[0].Tell(target, &blob{Data: []byte("after")}))
	select {
	case b := <-got:
		require.Equal(t, []byte("after"), b.Data)
	case <-time.After(10 * time.Second):
		t.Fatal("the message after the refused one never arrived")
	}
}

type blob struct{ Data []byte }

func init() { actor.RegisterMessage[blob]() }

// Death watch across ranks: PoisonPill and Stop cross, and the watcher
// gets Terminated; a watch of a missing actor gets TerminatedNotFound; an
// unwatched actor's end is not reported.
func TestDeathWatch(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	spawnVictim := func(name string) *actor.PID {
		_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(echo), name)
		require.NoError(t, err)
		return nodes[0].PID(1, name)
	}
	terminated := make(chan *actor.Terminated, 10)
	type watchMsg struct{ pid *actor.PID }
	type unwatchMsg struct{ pid *actor.PID }
	watcher := nodes[0].Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case watchMsg:
			c.Watch(m.pid)
			c.Respond(true)
		case unwatchMsg:
			c.Unwatch(m.pid)
			c.Respond(true)
		case *actor.Terminated:
			terminated <- m
		}
	}))
	root := nodes[0].Root()
	// do has the watcher send Watch or Unwatch; once it answered, they are
	// in the ring to rank 1, ahead of anything sent later.
	do := func(m any) {
		_, err := root.RequestFuture(watcher, m, 10*time.Second).Result()
		require.NoError(t, err)
	}

	a := spawnVictim("a")
	do(watchMsg{a})
	waitWatched(t, nodes[0], a) // the Watch reached rank 1 before the pill
	root.Poison(a)
	tm := recv(t, terminated, "Terminated after PoisonPill")
	assert.True(t, a.Equal(tm.Who), "%v", tm.Who)
	assert.Equal(t, actor.TerminatedStopped, tm.Why)

	b := spawnVictim("b")
	do(watchMsg{b})
	waitWatched(t, nodes[0], b)
	root.Stop(b)
	tm = recv(t, terminated, "Terminated after Stop")
	assert.True(t, b.Equal(tm.Who), "%v", tm.Who)

	do(watchMsg{nodes[0].PID(1, "nobody")})
	tm = recv(t, terminated, "Terminated of a missing actor")
	assert.Equal(t, actor.TerminatedNotFound, tm.Why)

	c := spawnVictim("c")
	do(watchMsg{c})
	do(unwatchMsg{c})
	waitWatched(t, nodes[0], c)
	root.Poison(c)
	select {
	case tm := <-terminated:
		t.Fatalf("unwatched actor reported: %v", tm)
	case <-time.After(200 * time.Millisecond):
	}
}

// waitWatched makes sure everything rank 0 sent to pid's rank before has
// been delivered: a request to the same rank comes back after it.
func waitWatched(t *testing.T, n *actor.Node, pid *actor.PID) {
	t.Helper()
	r, _ := actor.RankOf(pid)
	_, err := n.Root().RequestFuture(n.PID(r, "nobody-barrier"), &ping{}, 10*time.Second).Result()
	require.ErrorIs(t, err, actor.ErrDeadLetter)
}

// A node that closes tells the others: their watchers of its actors get
// TerminatedAddressTerminated, and sends to it fail with ErrRankGone.
func TestCloseTerminatesWatches(t *testing.T) {
	nodes := startLocal(t, 3, actor.Config{})
	_, err := nodes[2].SpawnNamed(actor.PropsFromFunc(echo), "echo")
	require.NoError(t, err)
	target := nodes[0].PID(2, "echo")
	terminated := make(chan *actor.Terminated, 1)
	watcher := nodes[0].Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.PID:
			c.Watch(m)
		case *actor.Terminated:
			terminated <- m
		}
	}))
	nodes[0].Root().Send(watcher, target)
	waitWatched(t, nodes[0], target)
	require.NoError(t, nodes[2].Close())

	tm := recv(t, terminated, "Terminated")
	assert.Equal(t, actor.TerminatedAddressTerminated, tm.Why)
	assert.True(t, target.Equal(tm.Who), "%v", tm.Who)
	require.Eventually(t, func() bool { return nodes[1].Gone(2) != nil }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, nodes[0].Tell(target, &ping{}), actor.ErrRankGone)
	_, err = nodes[0].Root().RequestFuture(target, &ping{}, 10*time.Second).Result()
	assert.ErrorIs(t, err, actor.ErrDeadLetter, "a request to a gone rank fails at once")
	// Ranks 0 and 1 still talk.
	_, err = nodes[1].SpawnNamed(actor.PropsFromFunc(echo), "echo")
	require.NoError(t, err)
	_, err = nodes[0].Root().RequestFuture(nodes[0].PID(1, "echo"), &ping{}, 10*time.Second).Result()
	assert.NoError(t, err)
}

// System messages other than the four that cross are refused, reported.
func TestSystemMessageNotRemotable(t *testing.T) {
	nodes := startLocal(t, 2, actor.Config{})
	evs := events[*actor.UndeliverableEvent](t, nodes[0])
	pid := nodes[0].PID(1, "x")
	proc, _ := nodes[0].System().ProcessRegistry.Get(pid)
	proc.SendSystemMessage(pid, &protoactor.Restart{})
	ev := recv(t, evs, "UndeliverableEvent")
	assert.True(t, errors.Is(ev.Err, actor.ErrNotRemotable), "%v", ev.Err)
}
