package endpoint

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/actorsys"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestManager(t *testing.T, p *fakeProvider, cfg Config) *Manager {
	t.Helper()
	sys := actorsys.New()
	cfg.System = sys
	if cfg.Signals == 0 {
		cfg.Signals = 8
	}
	m, err := NewManager(p, 4, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, m.Close(context.Background()))
		sys.Shutdown()
	})
	return m
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func write(n int) *rdma.WQE { return &rdma.WQE{Op: rdma.OpWrite, Len: n} }

func signalled(n int) *rdma.WQE {
	return &rdma.WQE{Op: rdma.OpWrite, Len: n, Signal: rdma.Signal{Mode: rdma.SignalInc, Value: 1}}
}

func TestRoutingDataAndSignalEndpoints(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{})
	g, err := m.Group(0, 1)
	require.NoError(t, err)
	require.NoError(t, g.Post(-1, write(1), nil, false))
	require.NoError(t, g.Post(3, signalled(2), nil, false))
	require.NoError(t, g.Post(3, signalled(3), nil, false))

	data, _ := g.Endpoint(-1)
	sc, _ := g.Endpoint(3)
	assert.Equal(t, -1, data.Signal())
	assert.Equal(t, 3, sc.Signal())
	assert.NotSame(t, data, sc)
	require.Len(t, p.qps, 1, "one QP per peer shared by the group's endpoints (m=1)")
	log := p.qps[0].posted()
	require.Len(t, log, 3)
	assert.Equal(t, uint64(data.route), log[0].WrID>>routeShift, "no signal: data endpoint")
	assert.Equal(t, uint64(sc.route), log[1].WrID>>routeShift, "signal 3: its SCEndpoint")
	assert.Equal(t, []uint64{0, 1}, []uint64{log[1].WrID & seqMask, log[2].WrID & seqMask}, "per-endpoint sequence in the wr_id payload")

	_, err = g.Endpoint(8)
	assert.Error(t, err, "signal index beyond Signals")
}

func TestAggregateDefersDoorbellAndSignalOrdersAfterData(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{})
	g, err := m.Group(0, 2)
	require.NoError(t, err)
	lens := func() (out []int) {
		for _, w := range p.qps[0].posted() {
			out = append(out, w.Len)
		}
		return out
	}
	// A batch mixing endpoints: data, signal 1, data, signal 1, data.
	require.NoError(t, g.Post(-1, write(1), nil, true))
	require.NoError(t, g.Post(1, signalled(2), nil, true))
	require.NoError(t, g.Post(-1, write(3), nil, true))
	require.NoError(t, g.Post(1, signalled(4), nil, true))
	require.NoError(t, g.Post(-1, write(5), nil, true))
	assert.Empty(t, p.qps[0].posted(), "aggregated posts ring no doorbell")

	require.NoError(t, g.Post(2, signalled(6), nil, false))
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, lens(), "the closing post sends the batch across endpoints in issue order")
}

func TestSignalNeverOvertakesDataAcrossGoroutines(t *testing.T) {
	// Regression (conformance Concurrency/SignalAfterPutAmongGoroutines):
	// while one goroutine holds the data endpoint's doorbell, another's
	// put+signal must still post its data before its signal.
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{Depth: 64})
	g, _ := m.Group(0, 1)
	const senders, rounds = 4, 500
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				id := s*rounds + i
				if err := g.Post(-1, write(id), nil, false); err != nil {
					t.Error(err)
					return
				}
				if err := g.Post(1+s, &rdma.WQE{Op: rdma.OpSignal, Len: -id, Signal: rdma.Signal{Mode: rdma.SignalInc}}, nil, false); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for _, w := range p.qps[0].posted() {
		if w.Len > 0 {
			seen[w.Len] = true
		} else {
			require.True(t, seen[-w.Len], "signal of put %d posted before its data", -w.Len)
		}
	}
}

func TestFlushRingsAggregatedAndWaitsForCompletion(t *testing.T) {
	p := &fakeProvider{inline: false}
	m := newTestManager(t, p, Config{})
	g, err := m.Group(0, 1)
	require.NoError(t, err)
	var ctr atomic.Uint64
	for i := 0; i < 10; i++ {
		require.NoError(t, g.Post(-1, write(8), &ctr, true))
	}
	assert.Equal(t, uint64(0), ctr.Load())
	require.NoError(t, g.Flush(deadline(t)))
	assert.Equal(t, uint64(10), ctr.Load(), "Flush returns after every earlier post completed")
	assert.Len(t, p.qps[0].posted(), 10)
}

func TestFlushHonoursDeadline(t *testing.T) {
	p := &fakeProvider{inline: false}
	m := newTestManager(t, p, Config{})
	g, err := m.Group(0, 1)
	require.NoError(t, err)
	// Hold before posting: the endpoint actor, kicked by the doorbell,
	// could otherwise complete the write first (1-2 runs in 100 failed).
	p.qps[0].setHold(true)
	require.NoError(t, g.Post(-1, write(8), nil, false))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = g.Flush(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
	p.qps[0].setHold(false)
	require.NoError(t, g.Flush(deadline(t)))
}

func TestBackpressureRingFull(t *testing.T) {
	p := &fakeProvider{inline: false}
	m := newTestManager(t, p, Config{Depth: 4, PostTimeout: 40 * time.Millisecond,
		Idle: idle.Strategy{Spins: 1, Yields: 1, MinSleep: time.Millisecond, MaxSleep: 5 * time.Millisecond}})
	g, err := m.Group(0, 1)
	require.NoError(t, err)
	data, _ := g.Endpoint(-1)
	p.qps[0].setHold(true) // the NIC completes nothing
	// The endpoint actor's progress loop is woken by doorbells; with holds it
	// completes nothing, so the ring fills after depth posts.
	for i := 0; i < 4; i++ {
		require.NoError(t, g.Post(-1, write(1), nil, false))
	}
	err = g.Post(-1, write(1), nil, false)
	require.ErrorIs(t, err, ErrRingFull)
	var rf *RingFullError
	require.ErrorAs(t, err, &rf)
	assert.Equal(t, 4, rf.Depth)
	assert.Equal(t, uint64(4), data.sq.reserved.Load(), "a timed-out post reserves nothing")

	p.qps[0].setHold(false)
	require.NoError(t, g.Post(-1, write(1), nil, false), "room again once completions arrive")
	require.NoError(t, g.Flush(deadline(t)))
	assert.Len(t, p.qps[0].posted(), 5)
}

func TestPutValueSlotsNeverReusedEarly(t *testing.T) {
	p := &fakeProvider{inline: false}
	m := newTestManager(t, p, Config{Depth: 8})
	g, err := m.Group(0, 1)
	require.NoError(t, err)
	const n = 2000
	for i := 0; i < n; i++ {
		w := &rdma.WQE{Op: rdma.OpWrite, RemoteOff: 8 * i}
		require.NoError(t, g.PostValue(-1, w, uint64(i)*3+1, 8, i%3 == 0))
	}
	require.NoError(t, g.Flush(deadline(t)))
	log := p.qps[0].posted()
	require.Len(t, log, n)
	for i, w := range log {
		require.Equal(t, 8*i, w.RemoteOff)
		got := w.Local.Bytes()[w.LocalOff : w.LocalOff+8]
		require.Equal(t, uint64(i)*3+1, leUint64(got), "value %d: the fake NIC copies the slot when posted; a reused slot would show a later value", i)
	}
}

func TestPutValueSizes(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{})
	g, _ := m.Group(0, 1)
	for _, size := range []int{1, 2, 4, 8} {
		require.NoError(t, g.PostValue(-1, &rdma.WQE{Op: rdma.OpWrite}, 0x0807060504030201, size, false))
	}
	log := p.qps[0].posted()
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for i, size := range []int{1, 2, 4, 8} {
		assert.Equal(t, size, log[i].Len)
		assert.Equal(t, want[:size], log[i].Local.Bytes()[log[i].LocalOff:log[i].LocalOff+size])
	}
}

func TestConcurrentProducersPublishInOrder(t *testing.T) {
	// Mixed: three posts in four aggregated. Never: producers race for
	// the direct path (Group.Post); a loser queues, and a winner whose
	// earlier entry of the endpoint is not yet published merges with it.
	// Either way every entry is posted once, in sequence.
	for name, aggregate := range map[string]func(i int) bool{
		"mixed": func(i int) bool { return i%4 != 3 },
		"never": func(int) bool { return false },
	} {
		t.Run(name, func(t *testing.T) {
			p := &fakeProvider{inline: true}
			m := newTestManager(t, p, Config{Depth: 16})
			g, _ := m.Group(0, 1)
			const producers, each = 4, 2000
			var wg sync.WaitGroup
			for w := 0; w < producers; w++ {
				wg.Go(func() {
					for i := 0; i < each; i++ {
						if err := g.Post(-1, write(w*each+i+1), nil, aggregate(i)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, g.Flush(deadline(t)))
			log := p.qps[0].posted()
			require.Len(t, log, producers*each)
			seen := map[int]bool{}
			for i, w := range log {
				require.Equal(t, uint64(i), w.WrID&seqMask, "posted in sequence order")
				require.False(t, seen[w.Len], "posted once")
				seen[w.Len] = true
			}
			// each producer's own posts keep their order
			last := make([]int, producers)
			for _, w := range log {
				pr := (w.Len - 1) / each
				require.Greater(t, w.Len, last[pr])
				last[pr] = w.Len
			}
		})
	}
}

func TestDirectPostSkipsTheQueue(t *testing.T) {
	// A post to an idle group goes to the QP at once, with no ticket; one
	// behind an aggregated entry takes the queue, after it.
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{Depth: 4})
	g, _ := m.Group(0, 1)
	for i := 1; i <= 6; i++ { // more than the depth: the ring wraps
		require.NoError(t, g.Post(-1, write(i), nil, false))
	}
	assert.Zero(t, g.tickets.Load(), "direct posts take no ticket")
	require.NoError(t, g.Post(-1, write(7), nil, true))
	require.NoError(t, g.Post(1, signalled(8), nil, false))
	assert.NotZero(t, g.tickets.Load(), "a post behind an aggregated entry is queued")
	var lens []int
	for _, w := range p.qps[0].posted() {
		lens = append(lens, w.Len)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, lens)
	assert.Zero(t, g.InFlight())
}

func TestQPSharingNtoM(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{Contexts: 4, QPsPerPeer: 2})
	for ctx := 0; ctx < 4; ctx++ {
		g, err := m.Group(ctx, 1)
		require.NoError(t, err)
		require.NoError(t, g.Post(-1, write(ctx+1), nil, false))
		require.NoError(t, g.Post(ctx, signalled(10+ctx), nil, false))
	}
	require.Len(t, p.qps, 2, "4 contexts share 2 QPs to the peer")
	byQP := map[*fakeQP][]int{}
	for _, q := range p.qps {
		for _, w := range q.posted() {
			byQP[q] = append(byQP[q], w.Len)
		}
	}
	assert.ElementsMatch(t, []int{1, 10, 3, 12}, byQP[p.qps[0]], "contexts 0 and 2 on QP 0")
	assert.ElementsMatch(t, []int{2, 11, 4, 13}, byQP[p.qps[1]], "contexts 1 and 3 on QP 1")
	// 8 endpoints hold references; closing the manager closes both QPs once.
	require.NoError(t, m.Close(context.Background()))
	assert.Equal(t, 2, p.closed)
}

func TestQPRefcountClosesWithLastEndpoint(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{})
	g, _ := m.Group(0, 1)
	e1, _ := g.Endpoint(-1)
	e2, _ := g.Endpoint(1)
	require.Same(t, e1.qp, e2.qp)
	require.NoError(t, m.system.Root.StopFuture(e1.PID()).Wait())
	assert.Equal(t, 0, p.closed, "one endpoint still holds the QP")
	require.NoError(t, m.system.Root.StopFuture(e2.PID()).Wait())
	require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return p.closed == 1 }, 5*time.Second, time.Millisecond)
}

func TestQPFaultReachesSupervisorAndSticks(t *testing.T) {
	p := &fakeProvider{inline: false}
	faults := make(chan Fault, 4)
	m := newTestManager(t, p, Config{OnFault: func(f Fault) { faults <- f }})
	g, _ := m.Group(0, 3)
	require.NoError(t, g.Post(-1, write(1), nil, false))
	require.NoError(t, g.Flush(deadline(t)))

	p.qps[0].breakWith(errLinkDown)
	err := g.Post(-1, write(2), nil, false)
	var qe *rdma.QPError
	require.ErrorAs(t, err, &qe, "the doorbell meets the fault")
	assert.ErrorIs(t, err, errLinkDown)

	select {
	case f := <-faults:
		assert.Equal(t, 3, f.Peer)
		assert.Equal(t, "data", f.Route)
		assert.ErrorIs(t, f.Err, errLinkDown)
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor never saw the QP fault")
	}
	for i := 0; i < 3; i++ {
		err := g.Post(-1, write(3), nil, false)
		assert.ErrorIs(t, err, errLinkDown, "every later call on the QP returns the fault")
		err = g.Post(2, signalled(3), nil, false)
		assert.ErrorIs(t, err, errLinkDown, "also on the QP's other endpoints")
	}
	// One record per endpoint of the QP, however many posts met the
	// fault: the data endpoint's, and that of signal 2's, created after
	// the fault, which learns of it once its group lists it.
	require.Eventually(t, func() bool { return len(m.Faults()) == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	fs := m.Faults()
	require.Len(t, fs, 2)
	var routes []string
	for _, f := range fs {
		assert.Equal(t, 3, f.Peer)
		assert.ErrorIs(t, f.Err, errLinkDown)
		routes = append(routes, f.Route)
	}
	assert.ElementsMatch(t, []string{"data", "signal 2"}, routes)
}

func TestPeerLostFailsQPs(t *testing.T) {
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{})
	g1, _ := m.Group(0, 1)
	g2, _ := m.Group(0, 2)
	lost := &rdma.PeerLostError{Rank: 1, Reason: "test"}
	m.PeerLost(1, lost)
	assert.ErrorIs(t, g1.Post(-1, write(1), nil, false), rdma.ErrPeerLost)
	assert.NoError(t, g2.Post(-1, write(1), nil, false), "other peers are unaffected")
	require.Eventually(t, func() bool { return len(m.Faults()) == 1 }, 5*time.Second, time.Millisecond)
}

func TestRejectedWQEDoesNotStallTheRing(t *testing.T) {
	p := &fakeProvider{inline: true, rejectLen: 13}
	m := newTestManager(t, p, Config{Depth: 4})
	g, _ := m.Group(0, 1)
	require.NoError(t, g.Post(-1, write(1), nil, true))
	err := g.Post(-1, write(13), nil, false)
	require.ErrorIs(t, err, rdma.ErrOutOfBounds)
	for i := 0; i < 10; i++ { // more than depth: the rejected entry was retired
		require.NoError(t, g.Post(-1, write(2), nil, false))
	}
	assert.ErrorIs(t, g.Flush(deadline(t)), rdma.ErrOutOfBounds, "Flush reports the error recorded since the last Flush")
	assert.NoError(t, g.Flush(deadline(t)))
	assert.Len(t, p.qps[0].posted(), 11)
}

func TestConfigValidation(t *testing.T) {
	sys := actorsys.New()
	defer sys.Shutdown()
	_, err := NewManager(&fakeProvider{}, 2, Config{System: sys, Depth: 3})
	assert.Error(t, err)
	_, err = NewManager(&fakeProvider{}, 2, Config{})
	assert.Error(t, err)
	m, err := NewManager(&fakeProvider{}, 2, Config{System: sys})
	require.NoError(t, err)
	_, err = m.Group(0, 2)
	assert.Error(t, err, "peer out of range")
	_, err = m.Group(1, 0)
	assert.Error(t, err, "context out of range")
	require.NoError(t, m.Close(context.Background()))
	_, err = m.Group(0, 0)
	assert.ErrorIs(t, err, ErrClosed)
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func TestActorDrivesProgressWithoutWaiters(t *testing.T) {
	// A manual-progress provider completes nothing unless polled; after a
	// doorbell the endpoint actor polls until nothing is in flight, so a
	// local counter ticks with nobody flushing.
	p := &fakeProvider{inline: false}
	m := newTestManager(t, p, Config{})
	g, _ := m.Group(0, 1)
	var ctr atomic.Uint64
	for i := 0; i < 50; i++ {
		require.NoError(t, g.Post(-1, write(1), &ctr, false))
	}
	require.Eventually(t, func() bool { return ctr.Load() == 50 }, 5*time.Second, 100*time.Microsecond)
	assert.Equal(t, uint64(0), g.InFlight())
}

func TestManyEndpointsConcurrentOrder(t *testing.T) {
	// Producers spread over 128 SCEndpoints and the data endpoint, mixing
	// aggregated and rung posts: each producer's entries reach the QP in
	// its issue order, each once, whichever goroutine rings.
	p := &fakeProvider{inline: true}
	m := newTestManager(t, p, Config{Signals: 128, Depth: 8})
	g, _ := m.Group(0, 1)
	const producers, each = 4, 1500
	var wg sync.WaitGroup
	for w := range producers {
		wg.Go(func() {
			for i := range each {
				sig := (w*31 + i*7) % 129
				if err := g.Post(sig-1, write(w*each+i+1), nil, i%3 != 2); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, g.Flush(deadline(t)))
	log := p.qps[0].posted()
	require.Len(t, log, producers*each)
	last := make([]int, producers)
	seen := map[int]bool{}
	for _, w := range log {
		require.False(t, seen[w.Len], "posted once")
		seen[w.Len] = true
		pr := (w.Len - 1) / each
		require.Greater(t, w.Len, last[pr], "producer %d's posts in issue order", pr)
		last[pr] = w.Len
	}
}
