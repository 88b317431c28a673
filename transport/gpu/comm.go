package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

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
	xchg   *exchanger
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
	sigWin    *gin.Window // proxy: the gin window holding the signal words
	rings     []*proxyRing
	dc        DevComm

	mu       sync.Mutex // guards windows (appends) and closing
	windows  atomic.Pointer[[]*Window]
	closed   atomic.Bool
	proxyErr atomic.Pointer[ProxyError]
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
	if err := cfg.setDefaults(gc.ContextCount()); err != nil {
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
	if g.xchg, err = newExchanger(ctx, gc); err != nil {
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
	all, err := g.xchg.allGatherJSON(ctx, me)
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
	votes, err := g.xchg.allGatherJSON(ctx, why)
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
	peers, err := g.shareAlloc(ctx, sig, 8*g.nsig)
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

// setupProxy: signal words in a gin window (so the CPU proxies of peers
// add to them with VA signals), mapped into the device; counters and rings
// in pinned host memory; one proxy goroutine per ring.
func (g *Comm) setupProxy(ctx context.Context) error {
	var err error
	if g.sigWin, err = g.gc.RegisterWindow(ctx, pageRound(8*g.nsig), gin.StrictOrdering); err != nil {
		return fmt.Errorf("signal window: %w", err)
	}
	reg, err := g.ctx.HostRegister(g.sigWin.Bytes())
	if err != nil {
		return fmt.Errorf("map signal window: %w", err)
	}
	g.hosts = append(g.hosts, reg)
	g.signals = hostWords{g.sigWin.Bytes()}
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
	for _, r := range g.rings {
		go r.run()
	}
	return nil
}

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

// shareAlloc exchanges device allocation p (size bytes, from devAlloc)
// with every rank and returns each rank's allocation as mapped here: the
// peer's own pointer within this process, a CUDA IPC mapping across
// processes.
func (g *Comm) shareAlloc(ctx context.Context, p cuda.DevicePtr, size int) ([]uint64, error) {
	me := sharedAlloc{PID: os.Getpid(), Ptr: uint64(p), Size: size}
	for _, info := range g.infos {
		if info.PID != me.PID { // some rank needs a CUDA IPC handle
			h, err := g.ctx.IPCGetHandle(p)
			if err != nil {
				return nil, err
			}
			me.Handle = h.Reserved[:]
			break
		}
	}
	all, err := g.xchg.allGatherJSON(ctx, me)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, g.size)
	for r, b := range all {
		var s sharedAlloc
		if err := unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("rank %d's allocation: %w", r, err)
		}
		if s.Size != size {
			return nil, fmt.Errorf("rank %d registers %d bytes, this rank %d: %w", r, s.Size, size, ErrBadArgument)
		}
		switch {
		case r == g.rank || s.PID == os.Getpid():
			out[r] = s.Ptr
		default:
			var h cuda.IPCHandle
			copy(h.Reserved[:], s.Handle)
			q, err := g.ctx.IPCOpen(h)
			if err != nil {
				return nil, fmt.Errorf("map rank %d's memory: %w", r, err)
			}
			g.opened = append(g.opened, q)
			out[r] = uint64(q)
		}
	}
	return out, nil
}

type sharedAlloc struct {
	PID    int    `json:"pid"`
	Ptr    uint64 `json:"ptr"`
	Size   int    `json:"size"`
	Handle []byte `json:"ipc"`
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

// Err is the first proxy failure, or nil.
func (g *Comm) Err() error {
	if e := g.proxyErr.Load(); e != nil {
		return e
	}
	return nil
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

// Close stops the proxies and frees every device-side object of this rank.
// It is local: call it once no kernel of any rank uses this rank's memory
// (after a gin barrier). The gin.Comm and its windows stay open; the
// caller closes them.
func (g *Comm) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed.CompareAndSwap(false, true) {
		return nil
	}
	return g.release()
}

// release frees what New and RegisterWindow allocated, in reverse.
func (g *Comm) release() error {
	var errs []error
	for _, r := range g.rings {
		r.stopAndWait()
	}
	if ws := g.windows.Load(); ws != nil {
		for _, w := range *ws {
			errs = append(errs, w.release())
		}
	}
	if g.ctx == nil {
		return nil
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
