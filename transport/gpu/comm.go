package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// Comm is one rank's GPU side of a gin.Comm: its device, the device-side
// signals, counters and barriers kernels use, the windows registered
// through it, and (proxy path) the rings and CPU proxies that carry
// kernels' WQEs to the gin.Comm's provider. Kernels get it as DevComm.
//
// A Comm is safe for concurrent use; calls marked collective are made by
// every rank in the same order.
//
// Lock order: mu -> life; faultMu is a leaf. No lock is held while a
// proxy actor runs, and only mu across collective calls (RegisterWindow).
type Comm struct {
	gc     *gin.Comm
	cfg    Config
	path   Path
	rank   int
	size   int
	nsig   int // signal words: cfg.Signals user signals, then cfg.Barriers
	dev    cuda.Device
	ctx    *cuda.Context
	stream *cuda.Stream
	infos  []rankInfo

	peerCtxs []*cuda.Context  // retained: same-process peers on other devices
	allocs   []cuda.DevicePtr // device memory to free at Close
	hosts    []*cuda.HostMem  // pinned or registered host memory to release
	opened   []cuda.DevicePtr // IPC mappings to close

	abort     *cuda.HostMem  // the abort flag's page
	abortWord *atomic.Uint64 // the flag, in pinned host memory
	status    cuda.DevicePtr // first device-side error
	shadows   cuda.DevicePtr // barrier epochs, one word per signal
	signals   words          // this rank's signal words (device or host-mapped)
	counters  words
	// sigWin is set only where gin's signal words cannot be mapped into the
	// device (not page-aligned): device signals are then VA signals of this
	// window (proxy path fallback, no SignalInc/SignalAdd mixing check).
	sigWin *gin.Window
	rings  []*proxyRing
	sup    *actor.PID // proxy path: the rings' supervisor, in gc.ActorSystem()
	dc     DevComm

	mu      sync.Mutex // guards windows (appends) and closing
	windows atomic.Pointer[[]*Window]
	closed  atomic.Bool
	// life orders Close against the peer-lost callback, which touches the
	// abort flag's pinned memory: it sets closed, or sees it set, under it.
	life     sync.Mutex
	proxyErr atomic.Pointer[ProxyError]
	lost     atomic.Pointer[error]
	faultMu  sync.Mutex // guards faults
	faults   []*ProxyError
}

// New builds rank gc.Rank()'s GPU side over gc. Collective: every rank of
// gc calls it with an equal cfg (Device aside). It selects the device,
// exchanges with every rank who runs where, chooses the path, and
// allocates the device-side objects; on the proxy path it starts one CPU
// proxy per ring.
//
// It returns an error matching ErrNotSupported where there is no driver or
// GPU, or where PathLSA was asked for and some rank cannot map another's
// memory. A rank that fails leaves the others waiting in the exchange
// until ctx ends: give ctx a deadline.
func New(ctx context.Context, gc *gin.Comm, cfg Config) (_ *Comm, err error) {
	if err := cfg.setDefaults(gc.ContextCount(), gc.Signals()); err != nil {
		return nil, err
	}
	if err := cuda.Load(); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	g := &Comm{gc: gc, cfg: cfg, rank: gc.Rank(), size: gc.Size(), nsig: cfg.Signals + cfg.Barriers}
	empty := []*Window{}
	g.windows.Store(&empty)
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("gpu: rank %d: %w", g.rank, err), g.release())
		}
	}()
	if err := g.openDevice(); err != nil {
		return nil, err
	}
	if err := g.choosePath(ctx); err != nil {
		return nil, err
	}
	if err := g.allocCommon(); err != nil {
		return nil, err
	}
	if g.path == PathLSA {
		err = g.setupLSA(ctx)
	} else {
		err = g.setupProxy(ctx)
	}
	if err != nil {
		return nil, err
	}
	gc.OnPeerLost(func(_ int, err error) { g.peerLost(err) })
	return g, nil
}

// openDevice picks this rank's GPU, retains its primary context and makes
// the stream kernels run on.
func (g *Comm) openDevice() error {
	n, err := cuda.DeviceCount()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no GPU visible: %w", ErrNotSupported)
	}
	ord := g.gc.LSA().Rank % n
	if g.cfg.Device != nil {
		ord = *g.cfg.Device
	}
	if g.dev, err = cuda.GetDevice(ord); err != nil {
		return err
	}
	if g.ctx, err = g.dev.PrimaryContext(); err != nil {
		return err
	}
	g.stream, err = g.ctx.NewStream()
	return err
}

// rankInfo is what ranks tell each other first: where they run.
type rankInfo struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	BusID   string `json:"bus"`
	Ordinal int    `json:"ord"`
}

// choosePath exchanges rankInfo, lets each rank check that it can map
// every peer's GPU memory, and agrees on the path from everyone's votes.
func (g *Comm) choosePath(ctx context.Context) error {
	host, _ := os.Hostname()
	bus, err := g.dev.PCIBusID()
	if err != nil {
		return err
	}
	me := rankInfo{PID: os.Getpid(), Host: host, BusID: bus, Ordinal: g.dev.Ordinal()}
	all, err := allGatherJSON(ctx, g.gc, me)
	if err != nil {
		return err
	}
	g.infos = make([]rankInfo, len(all))
	for r, b := range all {
		if err := unmarshal(b, &g.infos[r]); err != nil {
			return fmt.Errorf("rank %d's info: %w", r, err)
		}
	}
	why := g.canMapAll(me)
	votes, err := allGatherJSON(ctx, g.gc, why)
	if err != nil {
		return err
	}
	var refusals []string
	for r, v := range votes {
		var s string
		if err := unmarshal(v, &s); err != nil {
			return fmt.Errorf("rank %d's vote: %w", r, err)
		}
		if s != "" {
			refusals = append(refusals, fmt.Sprintf("rank %d: %s", r, s))
		}
	}
	switch {
	case g.cfg.Path == PathProxy:
		g.path = PathProxy
	case len(refusals) == 0:
		g.path = PathLSA
	case g.cfg.Path == PathLSA:
		return fmt.Errorf("LSA path asked for, but %v: %w", refusals, ErrNotSupported)
	default:
		g.path = PathProxy
	}
	return nil
}

// canMapAll returns "" if this rank can map every peer's GPU memory (same
// host; same process: peer access; other process: CUDA IPC to a device it
// sees), else why not.
func (g *Comm) canMapAll(me rankInfo) string {
	n, err := cuda.DeviceCount()
	if err != nil {
		return err.Error()
	}
	byBus := map[string]cuda.Device{}
	for i := range n {
		d, err := cuda.GetDevice(i)
		if err != nil {
			return err.Error()
		}
		if b, err := d.PCIBusID(); err == nil {
			byBus[b] = d
		}
	}
	for r, p := range g.infos {
		if r == g.rank {
			continue
		}
		if p.Host != me.Host {
			return fmt.Sprintf("rank %d runs on host %s", r, p.Host)
		}
		d, ok := byBus[p.BusID]
		if !ok {
			return fmt.Sprintf("rank %d's GPU %s is not visible here", r, p.BusID)
		}
		can, err := g.dev.CanAccessPeer(d)
		if err != nil {
			return err.Error()
		}
		if !can {
			return fmt.Sprintf("no peer access from GPU %s to rank %d's GPU %s", me.BusID, r, p.BusID)
		}
	}
	return ""
}

// allocCommon allocates what both paths have: the abort flag (pinned host
// memory the host writes and kernels poll), the device error word and the
// barrier shadows.
func (g *Comm) allocCommon() error {
	var err error
	if g.abort, err = g.hostAlloc(8); err != nil {
		return err
	}
	g.abortWord = memword.Uint64(g.abort.Bytes(), 0)
	if g.status, err = g.devAlloc(8); err != nil {
		return err
	}
	g.shadows, err = g.devAlloc(8 * g.nsig)
	return err
}

// setupLSA: signal and counter words in device memory; every peer's signal
// words mapped here.
func (g *Comm) setupLSA(ctx context.Context) error {
	if err := g.enablePeers(); err != nil {
		return err
	}
	sig, err := g.devAlloc(8 * g.nsig)
	if err != nil {
		return err
	}
	g.signals = devWords{g.ctx, sig}
	ctr, err := g.devAlloc(8 * max(g.cfg.Counters, 1))
	if err != nil {
		return err
	}
	g.counters = devWords{g.ctx, ctr}
	peers, opened, err := g.shareAlloc(ctx, sig, 8*g.nsig, nil)
	g.opened = append(g.opened, opened...)
	if err != nil {
		return err
	}
	table, err := g.devUpload(encodeU64s(peers))
	if err != nil {
		return err
	}
	g.dc = g.devComm(devPathLSA, uint64(sig), uint64(table), uint64(ctr), 0)
	return nil
}

// vaSignalsOnly makes setupProxy take the VA-signal fallback whatever the
// alignment of gin's signal words (tests of the fallback).
var vaSignalsOnly = false

// setupProxy: device signals are gin's own indexed signals, device signal s
// being gin signal s: gin.Comm.SignalWords registered with the device
// (cuMemHostRegister) so kernels poll the words peers' proxies add to with
// gin.SignalInc and gin.SignalAdd, and gin's SignalInc/SignalAdd mixing
// check applies to kernels' signals too. Registration takes whole pages,
// so the words must start on a page (the shm and ofi providers map their
// regions); where they do not, device signals fall back to VA signals of a
// gin window of their own (StrictOrdering), without the mixing check.
// Counters and rings live in pinned host memory; one proxy actor per ring.
func (g *Comm) setupProxy(ctx context.Context) error {
	words := g.gc.SignalWords()
	aligned := cuda.CanHostRegister(words)
	// Collective (the fallback registers a window): every rank must choose
	// the same.
	votes, err := allGatherJSON(ctx, g.gc, aligned && !vaSignalsOnly)
	if err != nil {
		return err
	}
	useGin := true
	for _, v := range votes {
		var ok bool
		if err := unmarshal(v, &ok); err != nil || !ok {
			useGin = false
		}
	}
	if !useGin {
		if g.sigWin, err = g.gc.RegisterWindow(ctx, pageRound(8*g.nsig), gin.StrictOrdering); err != nil {
			return fmt.Errorf("signal window: %w", err)
		}
		words = g.sigWin.Bytes()
	}
	reg, err := g.ctx.HostRegister(words)
	if err != nil {
		return fmt.Errorf("map signal words: %w", err)
	}
	g.hosts = append(g.hosts, reg)
	g.signals = hostWords{words}
	ctr, err := g.hostAlloc(8 * max(g.cfg.Counters, 1))
	if err != nil {
		return err
	}
	g.counters = hostWords{ctr.Bytes()}
	descs := make([]byte, 0, ringDescBytes*g.cfg.Contexts)
	for i := range g.cfg.Contexts {
		r, err := g.newProxyRing(i)
		if err != nil {
			return err
		}
		g.rings = append(g.rings, r)
		descs = append(descs, encodeRingDesc(uint64(r.dev), uint64(r.host.Dev()), uint32(g.cfg.RingDepth))...)
	}
	table, err := g.devUpload(descs)
	if err != nil {
		return err
	}
	g.dc = g.devComm(devPathProxy, uint64(reg.Dev()), 0, uint64(ctr.Dev()), uint64(table))
	return g.startProxies()
}

// GinSignals reports whether device signals are gin's own indexed signals
// (device signal s is gin signal s: the proxy path, where gin's signal
// words could be mapped into the device), so Go code may signal and wait
// on them with gin's calls. It is false on the LSA path (device memory)
// and on the proxy path's VA-signal fallback.
func (g *Comm) GinSignals() bool { return g.path == PathProxy && g.sigWin == nil }

func (g *Comm) devComm(path int32, signals, peerSignals, counters, rings uint64) DevComm {
	return devComm{
		rank: int32(g.rank), size: int32(g.size), lsaSize: int32(g.gc.LSA().NRanks), path: path,
		nSignals: int32(g.cfg.Signals), nCounters: int32(g.cfg.Counters), nBarriers: int32(g.cfg.Barriers),
		nContexts: int32(len(g.rings)), signals: signals, peerSignals: peerSignals, counters: counters,
		shadows: uint64(g.shadows), abortFlag: uint64(g.abort.Dev()), status: uint64(g.status), rings: rings,
	}.encode()
}

// enablePeers retains the primary context of each same-process peer on
// another GPU and enables peer access to it.
func (g *Comm) enablePeers() error {
	seen := map[int]bool{g.dev.Ordinal(): true}
	for r, p := range g.infos {
		if r == g.rank || p.PID != os.Getpid() || seen[p.Ordinal] {
			continue
		}
		seen[p.Ordinal] = true
		d, err := cuda.GetDevice(p.Ordinal)
		if err != nil {
			return err
		}
		pc, err := d.PrimaryContext()
		if err != nil {
			return err
		}
		g.peerCtxs = append(g.peerCtxs, pc)
		if err := g.ctx.EnablePeerAccess(pc); err != nil {
			return err
		}
	}
	return nil
}

// shareAlloc exchanges device allocation p (size bytes) with every rank
// and returns each rank's allocation as mapped here: the peer's own
// pointer within this process, a CUDA IPC mapping across processes.
// Collective: a rank whose allocation failed passes its error as failed
// and still takes part, and then every rank fails (with what failed
// where), so none waits for it.
//
// It returns the IPC mappings it opened (to close with the allocation)
// even when it fails; a failure to map a peer's memory is this rank's
// alone (RegisterWindow votes on it).
func (g *Comm) shareAlloc(ctx context.Context, p cuda.DevicePtr, size int, failed error) (_ []uint64, opened []cuda.DevicePtr, _ error) {
	me := sharedAlloc{PID: os.Getpid(), Ptr: uint64(p), Size: size}
	for _, info := range g.infos {
		if failed == nil && info.PID != me.PID { // some rank needs a CUDA IPC handle
			h, err := g.ctx.IPCGetHandle(p)
			if err != nil {
				failed = err
				break
			}
			me.Handle = h.Reserved[:]
			break
		}
	}
	if failed != nil {
		me.Err = failed.Error()
	}
	all, err := allGatherJSON(ctx, g.gc, me)
	if err != nil {
		return nil, nil, errors.Join(failed, err)
	}
	peers := make([]sharedAlloc, len(all))
	var errs []error
	for r, b := range all {
		if err := unmarshal(b, &peers[r]); err != nil {
			errs = append(errs, fmt.Errorf("rank %d's allocation: %w", r, err))
			continue
		}
		switch s := peers[r]; {
		case r == g.rank && failed != nil:
			errs = append(errs, failed)
		case s.Err != "":
			errs = append(errs, fmt.Errorf("rank %d: %s: %w", r, s.Err, ErrPeerFailed))
		case s.Size != size:
			errs = append(errs, fmt.Errorf("rank %d registers %d bytes, this rank %d: %w", r, s.Size, size, ErrBadArgument))
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	out := make([]uint64, g.size)
	for r, s := range peers {
		switch {
		case r == g.rank || s.PID == os.Getpid():
			out[r] = s.Ptr
		default:
			var h cuda.IPCHandle
			copy(h.Reserved[:], s.Handle)
			q, err := g.ctx.IPCOpen(h)
			if err != nil {
				return nil, opened, fmt.Errorf("map rank %d's memory: %w", r, err)
			}
			opened = append(opened, q)
			out[r] = uint64(q)
		}
	}
	return out, opened, nil
}

type sharedAlloc struct {
	PID    int    `json:"pid"`
	Ptr    uint64 `json:"ptr"`
	Size   int    `json:"size"`
	Handle []byte `json:"ipc"`
	Err    string `json:"err,omitempty"` // the rank's allocation failed
}

// Allocation helpers: everything they return is released by Close.

func (g *Comm) devAlloc(n int) (cuda.DevicePtr, error) {
	p, err := g.ctx.MemAlloc(n)
	if err != nil {
		return 0, err
	}
	g.allocs = append(g.allocs, p)
	return p, nil
}

func (g *Comm) devUpload(b []byte) (cuda.DevicePtr, error) {
	p, err := g.devAlloc(max(len(b), 8))
	if err != nil {
		return 0, err
	}
	return p, g.ctx.CopyToDevice(p, b)
}

func (g *Comm) hostAlloc(n int) (*cuda.HostMem, error) {
	h, err := g.ctx.HostAlloc(n)
	if err != nil {
		return nil, err
	}
	g.hosts = append(g.hosts, h)
	return h, nil
}

func pageRound(n int) int {
	p := os.Getpagesize()
	return max((n+p-1)/p*p, p)
}

// Rank is this rank's world rank.
func (g *Comm) Rank() int { return g.rank }

// Size is the world size.
func (g *Comm) Size() int { return g.size }

// Path is the path New chose: PathLSA or PathProxy.
func (g *Comm) Path() Path { return g.path }

// Gin is the gin.Comm this Comm was built on.
func (g *Comm) Gin() *gin.Comm { return g.gc }

// Device is this rank's GPU.
func (g *Comm) Device() cuda.Device { return g.dev }

// Context is the device's primary context.
func (g *Comm) Context() *cuda.Context { return g.ctx }

// Stream is the stream Launch queues kernels on.
func (g *Comm) Stream() *cuda.Stream { return g.stream }

// DevComm is the communicator to pass to kernels (by value).
func (g *Comm) DevComm() DevComm { return g.dc }

// Abort sets the abort flag: every wait, flush and ring reservation of
// this rank's kernels returns false within a few polls. The flag stays set
// until ClearAbort. Safe to call at any time, from any goroutine.
func (g *Comm) Abort() { g.abortWord.Store(1) }

// ClearAbort clears the abort flag. Call it only when no kernel of this
// rank runs; on the proxy path a ring that a kernel abandoned stays
// unusable (make a new Comm).
func (g *Comm) ClearAbort() { g.abortWord.Store(0) }

// Aborted reports whether the abort flag is set.
func (g *Comm) Aborted() bool { return g.abortWord.Load() != 0 }

// Err is the first proxy failure (a *ProxyError: a WQE gin refused, a
// torn ring, a lost peer), or on the LSA path the lost-peer error of the
// gin.Comm, or nil. Either set the abort flag when they happened.
func (g *Comm) Err() error {
	if e := g.proxyErr.Load(); e != nil {
		return e
	}
	if e := g.lost.Load(); e != nil {
		return *e
	}
	return nil
}

// Faults returns the proxy failures the rings' supervisor recorded, in
// order: each stopped its ring's proxy actor (a failed ring is not
// restarted: its kernel side may hold a reservation never published; make
// a new Comm). Empty on the LSA path and while every proxy runs.
func (g *Comm) Faults() []*ProxyError {
	g.faultMu.Lock()
	defer g.faultMu.Unlock()
	return append([]*ProxyError(nil), g.faults...)
}

// peerLost is gin's notice of a lost rank: kernels waiting for it would
// wait until their Wait's deadline, so abort them now; on the proxy path
// every ring fails too (gin refuses every later post).
func (g *Comm) peerLost(err error) {
	g.life.Lock()
	defer g.life.Unlock()
	if g.closed.Load() {
		return
	}
	g.lost.CompareAndSwap(nil, &err)
	g.Abort()
	for _, r := range g.rings {
		r.fault(err)
	}
}

// DeviceError returns the first error a kernel of this rank recorded (a
// *DeviceError), or nil, and clears it.
func (g *Comm) DeviceError() error {
	b := make([]byte, 8)
	if err := g.ctx.CopyFromDevice(b, g.status); err != nil {
		return err
	}
	v := leU64(b)
	if v == 0 {
		return nil
	}
	if err := g.ctx.CopyToDevice(g.status, make([]byte, 8)); err != nil {
		return err
	}
	return &DeviceError{Code: uint32(v >> 32), Detail: uint32(v)}
}

// Close stops the proxies and frees every device-side object of this rank,
// windows included (their host registrations, device memory and IPC
// mappings). It is local: call it once no kernel of any rank uses this
// rank's memory (after a gin barrier). The gin.Comm stays open, and so do
// the gin windows of proxy-path windows not closed with Window.Close: the
// gin.Comm's Close releases them; close this Comm first.
func (g *Comm) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.life.Lock()
	first := g.closed.CompareAndSwap(false, true)
	g.life.Unlock()
	if !first {
		return nil
	}
	return g.release()
}

// release frees what New and RegisterWindow allocated, in reverse.
func (g *Comm) release() error {
	errs := []error{g.stopProxies()}
	if ws := g.windows.Load(); ws != nil {
		for _, w := range *ws {
			errs = append(errs, w.release())
		}
	}
	if g.ctx == nil {
		return errors.Join(errs...)
	}
	for _, p := range g.opened {
		errs = append(errs, g.ctx.IPCClose(p))
	}
	for i := len(g.hosts) - 1; i >= 0; i-- {
		errs = append(errs, g.hosts[i].Close())
	}
	for _, p := range g.allocs {
		errs = append(errs, g.ctx.MemFree(p))
	}
	if g.stream != nil {
		errs = append(errs, g.stream.Close())
	}
	for _, pc := range g.peerCtxs {
		errs = append(errs, pc.Close())
	}
	errs = append(errs, g.ctx.Close())
	g.opened, g.hosts, g.allocs, g.peerCtxs = nil, nil, nil, nil
	return errors.Join(errs...)
}
