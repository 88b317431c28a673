package gpu

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/ring"
)

// proxyIdle paces a proxy with nothing to drain: it spins long (kernels
// post in bursts and latency is the point), then yields, then parks up to
// 100 µs, so an idle Comm costs little CPU.
var proxyIdle = idle.Strategy{Spins: 1 << 14, Yields: 1 << 10, MinSleep: 2 * time.Microsecond, MaxSleep: 100 * time.Microsecond}

// proxyRing is one context's ring and the CPU proxy that drains it: the
// owner of the ring's consumer side (seed 003's "NIC"). It posts each WQE
// on gin context index, in ring order, so the gin context's strong
// signals carry over: a signal WQE is posted after every earlier WQE of
// the ring. Counters tick, and completed moves, once gin reports the puts
// locally complete (at once for inline providers such as shm; after a
// gin Flush otherwise).
type proxyRing struct {
	g      *Comm
	index  int
	dev    cuda.DevicePtr // RingDev (device memory)
	host   *cuda.HostMem  // host part
	r      *ring.Reader
	x      *gin.Context
	inline bool
	stop   chan struct{}
	done   chan struct{}
}

func (g *Comm) newProxyRing(i int) (*proxyRing, error) {
	x, err := g.gc.Context(i)
	if err != nil {
		return nil, err
	}
	p := &proxyRing{g: g, index: i, x: x, inline: g.gc.Capabilities().Inline,
		stop: make(chan struct{}), done: make(chan struct{})}
	if p.dev, err = g.devAlloc(ring.DevBytes); err != nil {
		return nil, err
	}
	if p.host, err = g.hostAlloc(ring.HostBytes(g.cfg.RingDepth)); err != nil {
		return nil, err
	}
	if p.r, err = ring.NewReader(p.host.Bytes(), g.cfg.RingDepth); err != nil {
		return nil, err
	}
	return p, nil
}

// run drains the ring until stopped or failed.
func (p *proxyRing) run() {
	defer close(p.done)
	buf := make([]ring.WQE, 256)
	last := map[uint32]int{} // peer -> index of its last WQE in the batch
	b := idle.New(proxyIdle)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		ws, err := p.r.Poll(buf)
		// Ring gin's doorbell once per peer per batch: every WQE but the
		// peer's last of the batch is posted with gin.Aggregate.
		clear(last)
		for i, w := range ws {
			last[w.Peer] = i
		}
		for i, w := range ws {
			if perr := p.post(w, last[w.Peer] != i); perr != nil {
				p.fail(w.Seq, perr)
				return
			}
		}
		if err != nil {
			p.fail(p.r.Next(), err)
			return
		}
		if len(ws) == 0 {
			b.Idle()
			continue
		}
		b.Reset()
		p.r.Release() // descriptors copied out: slots free
		if !p.inline {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err := p.x.Flush(ctx)
			cancel()
			if err != nil {
				p.fail(ws[len(ws)-1].Seq, err)
				return
			}
		}
		for _, w := range ws {
			if w.CounterInc {
				p.tick(w.Counter)
			}
		}
		p.r.Complete(p.r.Next())
	}
}

// post turns one WQE into the gin call it stands for; aggregate defers
// gin's doorbell to the peer's next non-aggregated post.
func (p *proxyRing) post(w ring.WQE, aggregate bool) error {
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
		dst, src := g.window(w.DstWindow), g.window(w.SrcWindow)
		if dst == nil || src == nil || dst.gw == nil || src.gw == nil {
			return fmt.Errorf("put between windows %d and %d: no such proxy windows: %w", w.DstWindow, w.SrcWindow, gin.ErrBadArgument)
		}
		if w.CounterInc && int(w.Counter) >= g.cfg.Counters {
			return fmt.Errorf("counter %d of %d: %w", w.Counter, g.cfg.Counters, gin.ErrUnknownCounter)
		}
		return p.x.Put(world, peer, dst.gw, toInt(w.DstOff), src.gw, toInt(w.SrcOff), toInt(w.Bytes), remote, gin.LocalNone, opts...)
	case ring.OpPutValue:
		dst := g.window(w.DstWindow)
		if dst == nil || dst.gw == nil {
			return fmt.Errorf("put value into window %d: no such proxy window: %w", w.DstWindow, gin.ErrBadArgument)
		}
		return p.x.PutValue(world, peer, dst.gw, toInt(w.DstOff), w.Bytes, int(w.ValueSize), remote, opts...)
	case ring.OpSignal:
		return p.x.Signal(world, peer, remote, opts...)
	}
	return fmt.Errorf("wqe op %d: %w", w.Op, gin.ErrBadArgument)
}

// remote maps a WQE's signal to a VA signal of the peer's signal window.
func (p *proxyRing) remote(w ring.WQE) (gin.RemoteAction, error) {
	g := p.g
	switch w.Remote {
	case ring.RemoteNone:
		return gin.None, nil
	case ring.RemoteInc, ring.RemoteAdd:
		if int(w.Signal) >= g.nsig {
			return gin.None, fmt.Errorf("signal %d of %d: %w", w.Signal, g.nsig, gin.ErrUnknownSignal)
		}
		if w.Remote == ring.RemoteInc {
			return gin.VASignalInc(g.sigWin, 8*int(w.Signal)), nil
		}
		return gin.VASignalAdd(g.sigWin, 8*int(w.Signal), w.SignalValue), nil
	}
	return gin.None, fmt.Errorf("wqe remote action %d: %w", w.Remote, gin.ErrBadArgument)
}

// tick adds one to counter c, where kernels read it (pinned host memory).
func (p *proxyRing) tick(c uint32) {
	memword.Uint64(p.g.counters.(hostWords).b, 8*int(c)).Add(1)
}

// fail records the first proxy error, marks the ring and aborts the
// rank's kernels so none waits for a WQE that will never be posted.
func (p *proxyRing) fail(seq uint64, err error) {
	p.g.proxyErr.CompareAndSwap(nil, &ProxyError{Context: p.index, Seq: seq, Err: err})
	p.r.Fail(1)
	p.g.Abort()
}

func (p *proxyRing) stopAndWait() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute): // a gin call stuck past its own timeouts
	}
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
