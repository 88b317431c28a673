package gpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/ring"
)

// The proxy path's CPU side: one protoactor-go actor per ring, which drains
// it and plays the part of the NIC in DeepEP's use of NVSHMEM IBGDA;
// children of one supervisor per Comm, all in the gin.Comm's actor system
// (gin.Comm.ActorSystem), beside the endpoint actors gin posts through.
//
// A GPU cannot wake a CPU, so a ring actor polls: each drain message
// handles up to drainBatches batches of WQEs, or drainPolls empty polls,
// or one idle park (internal/idle: spin, yield, then sleeps up to 100 µs),
// then the actor sends itself the next drain message. Between two, its
// mailbox delivers Stop and fault messages, so a proxy stops within one
// drain message, however busy its ring.
//
// A proxy fault (gin refused a WQE, a torn ring, a lost peer) sets the
// ring's status word and the abort flag at once, so every wait of the
// rank's kernels returns false, then panics inside Receive: the
// supervisor's strategy (proxyStrategy) records the fault (Comm.Faults)
// and stops the actor. A failed ring is not restarted: its kernel side
// may hold a reservation that will never be published.

// proxyIdle paces a proxy with nothing to drain: it spins long (kernels
// post in bursts and latency is the point), then yields, then parks up to
// 100 µs, so an idle Comm costs little CPU.
var proxyIdle = idle.Strategy{Spins: 1 << 14, Yields: 1 << 10, MinSleep: 2 * time.Microsecond, MaxSleep: 100 * time.Microsecond}

const (
	drainBatches = 16  // batches per drain message while WQEs keep coming
	drainPolls   = 256 // empty polls per drain message while spinning
	drainBuf     = 256 // WQEs per batch at most
)

// Messages of the ring actors. The hot path sends none but the actor's own
// drain messages: kernels post lock-free into the ring.
type (
	// drainRing makes a ring actor drain one round and send itself the next.
	drainRing struct{}
	// ringFault makes a ring actor fail with err (a lost peer): the
	// supervisor records it and stops the actor.
	ringFault struct{ err error }
	// spawnRing asks the supervisor to start the actor of a ring.
	spawnRing struct{ p *proxyRing }
)

// proxyRing is one context's ring: its memory (the Comm's: freed at Close,
// since a kernel may spin on it until it sees the abort flag) and its
// consumer side, which only its actor drives. The actor posts each WQE on
// gin context index, in ring order, so the gin context's strong signals
// carry over: a signal WQE is posted after every earlier WQE of the ring.
// Counters tick, and completed moves, once gin reports the puts locally
// complete (at once for inline providers such as shm; after a gin Flush
// otherwise).
type proxyRing struct {
	g      *Comm
	index  int
	dev    cuda.DevicePtr // RingDev (device memory)
	host   *cuda.HostMem  // host part
	r      *ring.Reader   // the actor's alone
	x      *gin.Context
	inline bool
	pid    atomic.Pointer[actor.PID]
	done   chan struct{} // closed when the actor stopped

	// Views of host words other goroutines read (Window.Close's drain wait).
	doorbell, completed, status *atomic.Uint64
}

func (g *Comm) newProxyRing(i int) (*proxyRing, error) {
	x, err := g.gc.Context(i)
	if err != nil {
		return nil, err
	}
	p := &proxyRing{g: g, index: i, x: x, inline: g.gc.Capabilities().Inline, done: make(chan struct{})}
	if p.dev, err = g.devAlloc(ring.DevBytes); err != nil {
		return nil, err
	}
	if p.host, err = g.hostAlloc(ring.HostBytes(g.cfg.RingDepth)); err != nil {
		return nil, err
	}
	if p.r, err = ring.NewReader(p.host.Bytes(), g.cfg.RingDepth); err != nil {
		return nil, err
	}
	h := p.host.Bytes()
	p.doorbell = memword.Uint64(h, ring.HostDoorbell)
	p.completed = memword.Uint64(h, ring.HostCompleted)
	p.status = memword.Uint64(h, ring.HostStatus)
	return p, nil
}

// startProxies spawns the supervisor and one actor per ring.
func (g *Comm) startProxies() error {
	sys := g.gc.ActorSystem()
	g.sup = sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return proxySupervisor{} },
		actor.WithSupervisor(proxyStrategy{g})))
	for _, r := range g.rings {
		res, err := sys.Root.RequestFuture(g.sup, spawnRing{r}, 10*time.Second).Result()
		if err != nil {
			return fmt.Errorf("start the proxy of ring %d: %w", r.index, err)
		}
		r.pid.Store(res.(*actor.PID))
	}
	return nil
}

// stopProxies stops the supervisor, and so every ring actor, and waits for
// them (a drain message takes at most about a batch's gin calls).
func (g *Comm) stopProxies() error {
	if g.sup == nil {
		return nil
	}
	var errs []error
	if err := g.gc.ActorSystem().Root.StopFuture(g.sup).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("stop the ring proxies: %w", err))
	}
	g.sup = nil
	for _, r := range g.rings {
		if r.pid.Load() == nil {
			continue
		}
		select {
		case <-r.done:
		case <-time.After(time.Minute): // a gin call stuck past its own timeouts
			errs = append(errs, fmt.Errorf("the proxy of ring %d did not stop", r.index))
		}
	}
	return errors.Join(errs...)
}

// fault makes the ring's actor fail with err (asynchronously).
func (p *proxyRing) fault(err error) {
	if pid := p.pid.Load(); pid != nil {
		p.g.gc.ActorSystem().Root.Send(pid, ringFault{err})
	}
}

// failNow marks the ring failed and aborts the rank's kernels, so none
// waits for a WQE that will never be posted; the first failure becomes
// Comm.Err. Called on the actor's goroutine, or the supervisor's.
func (p *proxyRing) failNow(pe *ProxyError) {
	p.status.CompareAndSwap(0, 1) // ring.Reader.Fail
	p.g.proxyErr.CompareAndSwap(nil, pe)
	p.g.Abort()
}

// proxySupervisor is the parent of a Comm's ring actors.
type proxySupervisor struct{}

func (proxySupervisor) Receive(c actor.Context) {
	if m, ok := c.Message().(spawnRing); ok {
		c.Respond(c.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &proxyActor{p: m.p, b: idle.New(proxyIdle), buf: make([]ring.WQE, drainBuf), last: map[uint32]int{}}
		})))
	}
}

// proxyStrategy records a ring actor's failure and stops the actor (no
// restart: see the comment at the top of this file).
type proxyStrategy struct{ g *Comm }

func (s proxyStrategy) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ interface{}) {
	s.g.recordFault(child, reason)
	sup.StopChildren(child)
}

// recordFault is the supervisor's record of a failed ring actor. A panic
// that is not a *ProxyError (a bug) fails the ring all the same.
func (g *Comm) recordFault(child *actor.PID, reason interface{}) {
	var p *proxyRing
	for _, r := range g.rings {
		if pid := r.pid.Load(); pid != nil && pid.Equal(child) {
			p = r
		}
	}
	pe, ok := reason.(*ProxyError)
	if !ok {
		idx := -1
		if p != nil {
			idx = p.index
		}
		pe = &ProxyError{Context: idx, Err: fmt.Errorf("proxy actor panic: %v", reason)}
	}
	if p != nil {
		p.failNow(pe)
	}
	g.faultMu.Lock()
	g.faults = append(g.faults, pe)
	g.faultMu.Unlock()
}

// proxyActor drains one ring. Its fields are touched only in Receive.
type proxyActor struct {
	p    *proxyRing
	b    idle.Backoff
	buf  []ring.WQE
	last map[uint32]int // peer -> index of its last WQE in the batch
}

func (a *proxyActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		c.Send(c.Self(), drainRing{})
	case drainRing:
		if pe := a.drain(); pe != nil {
			a.p.failNow(pe)
			panic(pe) // to the supervisor: proxyStrategy
		}
		c.Send(c.Self(), drainRing{})
	case ringFault:
		pe := &ProxyError{Context: a.p.index, Seq: a.p.r.Next(), Err: m.err}
		a.p.failNow(pe)
		panic(pe)
	case *actor.Stopped:
		close(a.p.done)
	}
}

// drain polls the ring and posts what it finds, for at most drainBatches
// batches, drainPolls empty polls or one park of the idle backoff.
func (a *proxyActor) drain() *ProxyError {
	p := a.p
	for batches, polls := 0, 0; batches < drainBatches && polls < drainPolls; {
		ws, err := p.r.Poll(a.buf)
		if len(ws) == 0 && err == nil {
			polls++
			if a.b.Idle() {
				return nil // parked: back to the mailbox
			}
			continue
		}
		batches++
		a.b.Reset()
		if pe := a.post(ws); pe != nil {
			return pe
		}
		if err != nil {
			return &ProxyError{Context: p.index, Seq: p.r.Next(), Err: err}
		}
	}
	return nil
}

// post hands one batch to gin, then frees its slots, ticks its counters
// and completes it. gin's doorbell rings once per peer per batch: every
// WQE but the peer's last of the batch is posted with gin.Aggregate.
func (a *proxyActor) post(ws []ring.WQE) *ProxyError {
	p := a.p
	clear(a.last)
	for i, w := range ws {
		a.last[w.Peer] = i
	}
	for i, w := range ws {
		if err := p.postWQE(w, a.last[w.Peer] != i); err != nil {
			return &ProxyError{Context: p.index, Seq: w.Seq, Err: err}
		}
	}
	if len(ws) == 0 {
		return nil
	}
	p.r.Release() // descriptors copied out: slots free
	if !p.inline {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := p.x.Flush(ctx)
		cancel()
		if err != nil {
			return &ProxyError{Context: p.index, Seq: ws[len(ws)-1].Seq, Err: err}
		}
	}
	for _, w := range ws {
		if w.CounterInc {
			p.tick(w.Counter)
		}
	}
	p.r.Complete(p.r.Next())
	return nil
}

// postWQE turns one WQE into the gin call it stands for; aggregate defers
// gin's doorbell to the peer's next non-aggregated post.
func (p *proxyRing) postWQE(w ring.WQE, aggregate bool) error {
	g := p.g
	remote, err := p.remote(w)
	if err != nil {
		return err
	}
	var opts []gin.Option
	if aggregate {
		opts = aggregated
	}
	peer := int(w.Peer)
	world := g.gc.World()
	switch w.Op {
	case ring.OpPut:
		dst, src, err := g.transfer(w, "put")
		if err != nil {
			return err
		}
		return p.x.Put(world, peer, dst, toInt(w.DstOff), src, toInt(w.SrcOff), toInt(w.Bytes), remote, gin.LocalNone, opts...)
	case ring.OpPutValue:
		dst := g.window(w.DstWindow)
		if dst == nil || dst.gw == nil {
			return fmt.Errorf("put value into window %d: no such proxy window: %w", w.DstWindow, gin.ErrBadArgument)
		}
		return p.x.PutValue(world, peer, dst.gw, toInt(w.DstOff), w.Bytes, int(w.ValueSize), remote, opts...)
	case ring.OpSignal:
		return p.x.Signal(world, peer, remote, opts...)
	case ring.OpGet:
		dst, src, err := g.transfer(w, "get")
		if err != nil {
			return err
		}
		return p.x.Get(world, peer, dst, toInt(w.DstOff), src, toInt(w.SrcOff), toInt(w.Bytes), gin.LocalNone, opts...)
	}
	return fmt.Errorf("wqe op %d: %w", w.Op, gin.ErrBadArgument)
}

// transfer returns the gin windows of a put or get WQE (what) and checks
// its counter, which the proxy ticks itself.
func (g *Comm) transfer(w ring.WQE, what string) (dst, src *gin.Window, err error) {
	d, s := g.window(w.DstWindow), g.window(w.SrcWindow)
	if d == nil || s == nil || d.gw == nil || s.gw == nil {
		return nil, nil, fmt.Errorf("%s between windows %d and %d: no such proxy windows: %w", what, w.DstWindow, w.SrcWindow, gin.ErrBadArgument)
	}
	if w.CounterInc && int(w.Counter) >= g.cfg.Counters {
		return nil, nil, fmt.Errorf("counter %d of %d: %w", w.Counter, g.cfg.Counters, gin.ErrUnknownCounter)
	}
	return d.gw, s.gw, nil
}

// remote maps a WQE's signal to gin's indexed signal of the same index
// (SignalInc stays SignalInc, so gin's mixing check sees the kernel's
// modes), or to a VA signal of the signal window in the fallback.
func (p *proxyRing) remote(w ring.WQE) (gin.RemoteAction, error) {
	g := p.g
	switch w.Remote {
	case ring.RemoteNone:
		return gin.None, nil
	case ring.RemoteInc, ring.RemoteAdd:
		if int(w.Signal) >= g.nsig {
			return gin.None, fmt.Errorf("signal %d of %d: %w", w.Signal, g.nsig, gin.ErrUnknownSignal)
		}
		return g.remoteAction(gin.Signal(w.Signal), w.Remote == ring.RemoteInc, w.SignalValue), nil
	}
	return gin.None, fmt.Errorf("wqe remote action %d: %w", w.Remote, gin.ErrBadArgument)
}

// remoteAction is the gin action that adds to device signal s of a peer
// on the proxy path: SignalInc(s) or SignalAdd(s, v), or their VA twins on
// the signal window in the fallback.
func (g *Comm) remoteAction(s gin.Signal, inc bool, v uint64) gin.RemoteAction {
	switch {
	case g.sigWin == nil && inc:
		return gin.SignalInc(s)
	case g.sigWin == nil:
		return gin.SignalAdd(s, v)
	case inc:
		return gin.VASignalInc(g.sigWin, 8*int(s))
	}
	return gin.VASignalAdd(g.sigWin, 8*int(s), v)
}

// tick adds one to counter c, where kernels read it (pinned host memory).
func (p *proxyRing) tick(c uint32) {
	memword.Uint64(p.g.counters.(hostWords).b, 8*int(c)).Add(1)
}

// drained waits until the ring's proxy completed every WQE published when
// it was called, or the ring failed, or ctx ends.
func (p *proxyRing) drained(ctx context.Context) error {
	upTo := p.doorbell.Load()
	b := idle.New(idle.Default)
	for p.completed.Load() < upTo && p.status.Load() == 0 {
		if b.Idle() {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("ring %d: wait for the proxy to drain %d WQEs: %w", p.index, upTo, err)
			}
		}
	}
	return nil
}

var aggregated = []gin.Option{gin.Aggregate}

// toInt converts a WQE's 64-bit offset or length; values past MaxInt become
// -1, which gin rejects as out of bounds.
func toInt(v uint64) int {
	if v > math.MaxInt {
		return -1
	}
	return int(v)
}
