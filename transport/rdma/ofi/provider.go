//go:build ofi && cgo && linux

package ofi

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmactor/rdmactor/internal/pins"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

func init() { rdma.Register(Name, Open) }

// Name is the provider's registered name (RDMACTOR_TRANSPORT=ofi).
const Name = "ofi"

// Provider is one rank's libfabric NIC, the concrete type behind the
// rdma.Provider that Open returns. It is safe for concurrent use; each QP
// follows the caller duties of package rdma.
//
// Lock order: Provider.mu -> peerState.mu. peerState.queryMu is taken
// before peerState.modeMu, never with Provider.mu held. No lock is held
// across a libfabric call that can block except peerState.queryMu (a mode
// query) and qp.mu is never held across one.
type Provider struct {
	cfg   rdma.Config
	env   config
	it    info // the chosen fabric (the fields; it.c is freed)
	strat strategy
	caps  rdma.Capabilities
	mrm   mrModes
	qk    quirks
	f     fabricObjs
	name  []byte // main endpoint's address

	pins     pins.Pins   // Posts, Imports, Registers in progress; Close waits for them
	stopping atomic.Bool // the progress goroutine must end
	done     chan struct{}
	resume   chan struct{} // Resume: the progress goroutine stops standing back
	activity atomic.Uint64 // bumped by every post: keeps the progress goroutine spinning
	blocked  atomic.Bool   // the progress goroutine is (about to be) in fi_cq_sread
	kicks    atomic.Uint64 // Kick calls: a block that saw one begin must not start
	inflight atomic.Int64  // operations posted with a completion not yet seen
	tokens   atomic.Uint64 // mode query tokens

	mu        sync.Mutex
	closed    bool
	nextID    uint64
	regions   atomic.Pointer[[]*Region] // by region id (copy on write, under mu)
	imports   map[*remoteRegion]struct{}
	qps       atomic.Pointer[[]*qp] // by qp id (copy on write, under mu)
	unmapped  [][]byte              // mappings of closed regions, unmapped at Close
	unmapDone bool                  // Close has unmapped them: later ones go at once
	peers     []peerState           // by world rank
	ctrl      *Region               // mode query results and landing words
	ctxs      ctxPool
	stage     stagePool     // small writes' sources, where FI_INJECT is unsafe
	internal  sync.Map      // *ctx -> *internalOp
	warm      warmups       // peers whose connection warm-up waits to be posted
	dec       decoder       // under pollMu
	pollMu    sync.Mutex    // one reader of the CQ at a time: the progress goroutine or Poll
	spins     atomic.Uint64 // Poll and PollWait calls, for schedPoint
	events    atomic.Uint64 // activities (busy): completions, signals, moved data, posts
	seenEv    uint64        // events when PollWait last looked; guarded by pollMu
	busyAt    time.Time     // when PollWait first saw events at seenEv; guarded by pollMu
	polls     atomic.Uint64 // Poll and PollWait calls: the progress goroutine stands back while they come
	pollWaits atomic.Uint64 // PollWait calls (tests see a waiter reach its blocking phase)
	pushes    atomic.Uint64 // CQ reads after a post (push): the progress goroutine stands back while they come
	waiters   atomic.Int32  // PollWait callers waiting for pollMu
	slow      slowReads     // PollWait's record of its slow CQ reads; guarded by pollMu
	pollEnts  []cqEntry     // Poll's buffer, under pollMu

	// counter strategy
	sc      []scEndpoint
	scMax   int
	sigReg  atomic.Pointer[Region] // the signals region (the first exported one)
	cntrs   cntrSet                // progress goroutine only, set before sigReg
	lastCnt []uint64               // under pollMu
	lastErr []uint64               // under pollMu

	stats Stats
}

var _ rdma.Provider = (*Provider)(nil)

// Stats are counters of what the target side met; a signal that cannot
// be applied cannot be reported to its initiator, so it is counted here.
type Stats struct {
	SignalsApplied atomic.Uint64 // signal adds applied to local words
	SignalErrors   atomic.Uint64 // signal messages dropped (mixed modes, bad region, malformed)
	lastErr        atomic.Pointer[error]
}

// LastSignalError is the most recent reason a signal was dropped, or nil.
func (s *Stats) LastSignalError() error {
	if e := s.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

// peerState is what this rank knows of one peer: its endpoint address and
// control region (from the first descriptor of it imported), and the
// signal modes this rank has claimed on its signals.
type peerState struct {
	mu       sync.Mutex // guards the fields below until known is set
	known    atomic.Bool
	name     []byte
	addr     uint64 // fi_addr_t of its main endpoint
	ctrlBase uint64
	ctrlKey  uint64
	scAddrs  atomic.Pointer[[]uint64] // counter strategy: its signal endpoints

	modeMu  sync.Mutex
	modes   map[modeKey]uint64 // mode this rank's posts claimed (rdma.ModeInc/rdma.ModeAdd)
	modeGen atomic.Uint64      // bumped under modeMu by every change of modes
	queryMu sync.Mutex         // one mode query to the peer at a time
}

type modeKey struct{ region, word uint64 }

// Open opens the ofi provider for cfg.Rank with the fabric the environment
// selects (EnvProvider, EnvIface, EnvSignals, EnvProgress): fi_getinfo for
// an FI_EP_RDM endpoint with RMA, the domain's mr_mode honoured (see the
// package doc). Several providers may live in one process (goroutine
// ranks), each with its own fabric objects and progress goroutine.
//
// It returns an *rdma.UnsupportedError when no fabric offers what the
// signal strategy needs, and a *FabricError for libfabric failures.
func Open(cfg rdma.Config) (rdma.Provider, error) {
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("ofi: open: rank %d of size %d: invalid", cfg.Rank, cfg.Size)
	}
	env, err := configFromEnv()
	if err != nil {
		return nil, fmt.Errorf("ofi: open: %w", err)
	}
	it, strat, list, err := selectFabric(env)
	if err != nil {
		return nil, err
	}
	p := &Provider{cfg: cfg, env: env, it: *it, strat: strat, mrm: mrModesOf(it.mrMode), qk: quirksOf(it.prov),
		done: make(chan struct{}), resume: make(chan struct{}, 1), imports: map[*remoteRegion]struct{}{},
		peers: make([]peerState, cfg.Size)}
	p.it.c = nil
	if strat == cqdata && cfg.Size-1 > maxSender {
		list.free()
		return nil, &rdma.UnsupportedError{Provider: Name, Feature: fmt.Sprintf("%d ranks with cqdata signals (at most %d)", cfg.Size, maxSender+1)}
	}
	dup := dupInfo(it)
	list.free()
	if err := p.f.open(dup, defaultCQEntries, env.waitFD && !p.qk.spinOnly); err != nil {
		p.f.close()
		return nil, fmt.Errorf("ofi: open %s on %s: %w", p.it.prov, p.it.domain, err)
	}
	if p.name, err = epName(p.f.ep); err != nil {
		p.f.close()
		return nil, fmt.Errorf("ofi: open: %w", err)
	}
	empty := []*Region{nil} // id 0 is never used
	p.regions.Store(&empty)
	noQPs := []*qp{nil}
	p.qps.Store(&noQPs)
	if strat == counter {
		p.scMax = min(it.epCount, it.cntrCount) - 2 // the main endpoint and a margin
		p.scMax = max(0, min(p.scMax, 1024))
	}
	p.caps = capsOf(&p.it, strat, p.scMax)
	p.dec.pending = make([]pendingSig, cfg.Size)
	// The control region: mode query results and mismatch reports (query.go).
	ctrl, err := p.register(ctrlSize(cfg.Size), false, true)
	if err != nil {
		p.f.close()
		return nil, fmt.Errorf("ofi: open: control region: %w", err)
	}
	p.ctrl = ctrl
	stage, err := p.register(stageSlots*stageSlot, true, false)
	if err != nil {
		p.f.close()
		return nil, fmt.Errorf("ofi: open: staging region: %w", err)
	}
	p.stage.init(stage, &p.ctxs)
	go p.run()
	if env.debug {
		fmt.Fprintf(os.Stderr, "ofi: rank %d: %s on %s (%s), signals %s, mr_mode %v, strong %v, manual progress %v, inject %d\n",
			cfg.Rank, p.it.prov, p.it.domain, p.it.fabric, strat, p.mrm, p.caps.StrongSignals, p.it.dataManual, p.it.injectSize)
	}
	return p, nil
}

// selectFabric runs fi_getinfo with what the strategy needs, relaxing the
// ordering and then the progress hints when nothing matches them, and
// picks the first acceptable entry. The returned list owns the info.
func selectFabric(env config) (*info, strategy, *infoList, error) {
	base := fiRMA | fiRead | fiWrite | fiRemoteRead | fiRemoteWrite
	strats := []strategy{env.signals}
	if env.autoSignals {
		strats = []strategy{cqdata, counter}
	}
	type hint struct {
		order  uint64
		manual bool
	}
	hints := []hint{{fiOrderRMAWAW | fiOrderRMARAW, env.manual}, {fiOrderRMAWAW, env.manual}, {0, env.manual}}
	if env.manual {
		hints = append(hints, hint{0, false}) // a provider with auto progress only
	}
	var why []string
	for _, s := range strats {
		caps := base
		if s == counter {
			caps |= fiRMAEvent
		}
		var last error
		for _, h := range hints {
			mrMode := supportedMRMode
			if env.mrBasic {
				mrMode = fiMRBasic
			}
			list, err := getinfo(env.provider, env.iface, caps, fiContext|fiContext2, mrMode, h.order, h.manual, env.mrBasic)
			if err != nil {
				last = err
				continue
			}
			for i := range list.items {
				it := &list.items[i]
				if env.provider == "" && skipped(it.prov) {
					continue
				}
				if reason := unusable(it, s); reason != "" {
					why = append(why, fmt.Sprintf("%s on %s: %s", it.prov, it.domain, reason))
					continue
				}
				return it, s, list, nil
			}
			list.free()
		}
		if last != nil {
			why = append(why, fmt.Sprintf("%s signals need %s: fi_getinfo: %v", s, s.needs(), last))
		}
	}
	prov := env.provider
	if prov == "" {
		prov = "any provider"
	}
	if env.iface != "" {
		prov += " on " + env.iface
	}
	return nil, 0, nil, &rdma.UnsupportedError{Provider: Name, Feature: fmt.Sprintf("no usable fabric (%s, %s): %s",
		prov, env.signalsName(), strings.Join(why, "; "))}
}

// needs says what a strategy asks of a fabric.
func (s strategy) needs() string {
	if s == counter {
		return "FI_EP_RDM with RMA and FI_RMA_EVENT (remote-write counters)"
	}
	return "FI_EP_RDM with RMA and 64-bit remote CQ data"
}

func (c config) signalsName() string {
	if c.autoSignals {
		return "cqdata or counter signals"
	}
	return c.signals.String() + " signals"
}

// unusable says why an fi_info cannot carry strategy s, or "".
func unusable(it *info, s strategy) string {
	switch {
	case it.mrMode&(fiMRRaw|fiMRHMEM) != 0:
		return fmt.Sprintf("mr_mode %#x needs raw keys or device memory", it.mrMode)
	case it.mrKeySize > 8:
		return fmt.Sprintf("mr_key_size %d > 8", it.mrKeySize)
	case s == cqdata && it.cqDataSize < 8:
		return fmt.Sprintf("cq_data_size %d < 8 (cqdata signals need 64-bit immediate data)", it.cqDataSize)
	case s == counter && it.caps&fiRMAEvent == 0:
		return "no FI_RMA_EVENT (counter signals need remote-write counters)"
	case s == counter && it.mrMode&fiMREndpoint != 0:
		return "FI_MR_ENDPOINT (counter signals write one region through several endpoints)"
	case s == counter && min(it.epCount, it.cntrCount) < 4:
		return fmt.Sprintf("only %d endpoints/%d counters per domain", it.epCount, it.cntrCount)
	}
	return ""
}

// Name returns "ofi".
func (p *Provider) Name() string { return Name }

// Capabilities: see the package doc, "Capabilities".
func (p *Provider) Capabilities() rdma.Capabilities { return p.caps }

// Fabric names the libfabric provider and domain in use, e.g.
// "tcp;ofi_rxm on eth0".
func (p *Provider) Fabric() string { return p.it.prov + " on " + p.it.domain }

// Strategy names the signal strategy in use: "cqdata" or "counter".
func (p *Provider) Strategy() string { return p.strat.String() }

// Stats returns the provider's target-side counters.
func (p *Provider) Stats() *Stats { return &p.stats }

// Close closes every QP, import and region and the fabric objects; peers'
// later writes to this rank fail at the peers. Posts racing with Close end
// with rdma.ErrClosed. A second Close returns rdma.ErrClosed.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("ofi: close: %w", rdma.ErrClosed)
	}
	p.closed = true
	p.mu.Unlock()
	// Stop first, so that a PollWait blocked in fi_cq_sread returns, then
	// wait for every pinned call (posts, Poll, PollWait) to leave the CQ.
	p.stopping.Store(true)
	p.wakeup()
	p.pins.Close()
	p.wakeup()
	<-p.done

	p.mu.Lock()
	qps := *p.qps.Load()
	regions := *p.regions.Load()
	imports := p.imports
	p.imports = nil
	p.mu.Unlock()
	for _, q := range qps {
		if q != nil {
			q.closed.Store(true)
		}
	}
	for r := range imports {
		r.closed.Store(true)
	}
	var errs []error
	var mems [][]byte
	for _, r := range regions {
		if r == nil {
			continue
		}
		if err := r.close(); err == nil {
			if !r.external {
				mems = append(mems, r.mem)
			}
		} else if !errors.Is(err, rdma.ErrClosed) { // else its own Close has it
			errs = append(errs, err)
		}
	}
	for i := range p.sc {
		errs = append(errs, p.sc[i].close())
	}
	errs = append(errs, p.f.close())
	p.cntrs.free()
	p.mu.Lock()
	mems = append(mems, p.unmapped...)
	p.unmapped, p.unmapDone = nil, true
	p.mu.Unlock()
	for _, m := range mems { // after the endpoints: nothing places data any more
		errs = append(errs, unmap(m))
	}
	p.ctxs.freeAll()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ofi: close: %w", err)
	}
	return nil
}

// region returns the live region with id, or nil.
func (p *Provider) region(id uint64) *Region {
	rs := *p.regions.Load()
	if id >= uint64(len(rs)) {
		return nil
	}
	return rs[id]
}

// qpByID returns the live QP with id, or nil.
func (p *Provider) qpByID(id uint64) *qp {
	qs := *p.qps.Load()
	if id >= uint64(len(qs)) {
		return nil
	}
	return qs[id]
}

// ctxPool hands out C-allocated operation contexts; they are freed only
// when the provider closes (after its endpoints), since a completion may
// name one until then.
type ctxPool struct {
	mu    sync.Mutex
	free  []*ctx
	slabs []unsafe.Pointer
}

func (c *ctxPool) get() *ctx {
	c.mu.Lock()
	if len(c.free) == 0 {
		p, cs := ctxSlab(contextsPerSlab)
		c.slabs = append(c.slabs, p)
		for i := range cs {
			c.free = append(c.free, &cs[i])
		}
	}
	x := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	c.mu.Unlock()
	return x
}

func (c *ctxPool) put(x *ctx) {
	c.mu.Lock()
	c.free = append(c.free, x)
	c.mu.Unlock()
}

func (c *ctxPool) freeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.slabs {
		cfree(s)
	}
	c.slabs, c.free = nil, nil
}
