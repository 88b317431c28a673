package gin

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/internal/actorsys"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Comm is one rank's view of a communicator: its rank and size, teams,
// windows, signals, counters and contexts (ncclComm with its ncclDevComm,
// NCCL 2.28). Build one per rank with Init, NewComm or NewLocal.
//
// A Comm is safe for concurrent use; the calls marked collective must be
// made by every rank in the same order.
type Comm struct {
	cfg    Config
	boot   Bootstrap
	prov   rdma.Provider
	poller rdma.Poller     // prov, where waits can drive its progress; else nil
	spin   rdma.SpinPoller // prov, where waits poll it while they spin and block on bell; else nil
	// bell is rung by every put that adds to one of this rank's signals,
	// where the provider offers it (rdma.Belled: shm); nil otherwise.
	bell   rdma.Doorbell
	kicked *kickedBell // bell as waits hold it (nil without one), made once: a wait allocates nothing
	caps   rdma.Capabilities
	rank   int
	size   int
	lsa    int
	local  int      // ranks on this host (LocalRanks)
	cpus   int      // processors this host's ranks may run on (hostCPUs)
	hosts  []string // every rank's host identity, by rank
	system *actor.ActorSystem
	eps    *endpoint.Manager

	// peers is Config.Peers sorted, with this rank and without duplicates;
	// slot maps a world rank to its index in it (-1: not a peer). Both nil
	// without Config.Peers. slots is the length of per-peer arrays.
	peers []int
	slot  []int32
	slots int

	signals  *Window // Signals value words, then mode words from modeBase
	counters []atomic.Uint64
	shadows  []atomic.Uint64
	contexts []*Context

	lost atomic.Pointer[rdma.PeerLostError] // FailComm: the first loss
	// lostPeer holds each lost rank's error, in both modes.
	lostPeer []atomic.Pointer[rdma.PeerLostError]
	closed   atomic.Bool
	// busy counts calls that load or store mapped memory directly (signal
	// and VA words): Close waits for them before unmapping.
	busy atomic.Int64

	mu      sync.Mutex // guards windows
	windows []*Window
}

// NewComm builds rank boot.Rank()'s Comm over boot. Collective: every rank
// calls it with an equal cfg, but for Peers, which is each rank's own. The
// ranks first exchange their host identities (hostname and boot id, or
// RDMACTOR_HOST_ID), which the provider gets as rdma.Config.Hosts and which
// set LocalRanks and the default LSA team, and their peer sets. It fails
// with an *rdma.UnsupportedError (ErrNotSupported) when the provider lacks
// what cfg.Require names or the signal count it asks for, and with
// ErrBadArgument for a Peers naming a rank outside the world (also
// ErrPeerOutOfRange) or peer sets that are not symmetric (on every rank).
func NewComm(ctx context.Context, boot Bootstrap, cfg Config) (*Comm, error) {
	return newComm(ctx, boot, cfg, hostID(), false)
}

// newComm is NewComm for a rank on host (NewLocalOnHosts gives goroutine
// ranks hosts of their own); goroutineRanks says that other ranks of the
// job run in this process, whose default waits then yield quietly
// (IdleStrategy.QuietYield).
func newComm(ctx context.Context, boot Bootstrap, cfg Config, host string, goroutineRanks bool) (*Comm, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	c := &Comm{cfg: cfg, boot: boot, rank: boot.Rank(), size: boot.Size()}
	c.lostPeer = make([]atomic.Pointer[rdma.PeerLostError], c.size)
	if err := c.setPeers(); err != nil {
		return nil, err
	}
	if err := c.gatherHosts(ctx, host); err != nil {
		return nil, fmt.Errorf("new comm: %w", err)
	}
	prov, err := rdma.Open(cfg.Transport, rdma.Config{Rank: c.rank, Size: c.size, Job: boot.Job(), Hosts: c.hosts})
	if err != nil {
		return nil, fmt.Errorf("new comm: %w", err)
	}
	c.prov, c.caps = prov, prov.Capabilities()
	c.poller, _ = prov.(rdma.Poller)
	if c.poller == nil {
		c.spin, _ = prov.(rdma.SpinPoller)
	}
	if err := c.checkCaps(); err != nil {
		prov.Close()
		return nil, fmt.Errorf("new comm: %w", err)
	}
	if err := c.setTeams(); err != nil {
		prov.Close()
		return nil, err
	}
	if c.cfg.Idle == (IdleStrategy{}) {
		c.cfg.Idle = DefaultIdle
		if c.Oversubscribed() {
			c.cfg.Idle = OversubscribedIdle
		}
		c.cfg.Idle.QuietYield = goroutineRanks
		if goroutineRanks {
			c.cfg.Idle.OSYields = 0
		}
	}
	c.system = actorsys.New()
	c.eps, err = endpoint.NewManager(prov, c.size, endpoint.Config{
		Contexts: cfg.Contexts, QPsPerPeer: cfg.QPsPerPeer, Depth: cfg.SQDepth, Signals: cfg.Signals,
		PostTimeout: cfg.PostTimeout, Idle: c.cfg.Idle, System: c.system,
	})
	if err != nil {
		c.system.Shutdown()
		prov.Close()
		return nil, fmt.Errorf("new comm: %w", err)
	}
	c.counters = make([]atomic.Uint64, cfg.Counters)
	c.shadows = make([]atomic.Uint64, cfg.Signals)
	c.signals, err = c.register(ctx, rdma.SignalRegionSize(cfg.Signals), 0)
	if err != nil {
		c.teardown()
		return nil, fmt.Errorf("new comm: signals: %w", err)
	}
	if b, ok := c.signals.mr.(rdma.Belled); ok && c.poller == nil {
		c.bell = b.Doorbell()
		c.kicked = &kickedBell{c.bell, c}
	}
	c.contexts = make([]*Context, cfg.Contexts)
	for i := range c.contexts {
		c.contexts[i] = &Context{c: c, index: i, groups: make([]atomic.Pointer[endpoint.Group], c.slots)}
	}
	boot.OnLost(c.peerLost)
	return c, nil
}

func (c *Comm) checkCaps() error {
	r, name := c.cfg.Require, c.prov.Name()
	switch {
	case r.StrongSignals && !c.caps.StrongSignals:
		return &rdma.UnsupportedError{Provider: name, Feature: "strong signals (required by Config.Require)"}
	case r.SignalAdd && !c.caps.SignalAdd:
		return &rdma.UnsupportedError{Provider: name, Feature: "SignalAdd values other than 1 (required by Config.Require)"}
	case r.VASignals && !c.caps.VASignals:
		return &rdma.UnsupportedError{Provider: name, Feature: "VA signals (required by Config.Require)"}
	case r.MaxPutSize > c.caps.MaxPutSize:
		return &rdma.UnsupportedError{Provider: name, Feature: fmt.Sprintf("puts of %d bytes (max %d)", r.MaxPutSize, c.caps.MaxPutSize)}
	case c.cfg.Signals > c.caps.MaxSignals:
		return &rdma.UnsupportedError{Provider: name, Feature: fmt.Sprintf("%d signals (max %d)", c.cfg.Signals, c.caps.MaxSignals)}
	}
	return nil
}

func (c *Comm) setTeams() error {
	c.lsa = c.cfg.LSASize
	if c.lsa == 0 {
		c.lsa = 1
		if c.caps.LoadStore {
			c.lsa = hostBlock(c.hosts)
		}
	}
	if c.size%c.lsa != 0 {
		return fmt.Errorf("new comm: LSA size %d does not divide world size %d: %w", c.lsa, c.size, ErrBadArgument)
	}
	return nil
}

// modeOff is the byte offset of signal s's mode word in the signal region
// (rdma.SignalModeOff). Mode words start on the cache line after the value
// words: a peer spinning on a value word owns its line, and a sender that
// checks a mode word on that same line would have to pull it across cores
// before every add.
func (c *Comm) modeOff(s Signal) int { return rdma.SignalModeOff(c.cfg.Signals, int(s)) }

// peerLost is the bootstrap's notice: every wait of this Comm and every
// post to that rank fail from now on.
func (c *Comm) peerLost(e *rdma.PeerLostError) {
	if e.Rank >= 0 && e.Rank < c.size {
		c.lostPeer[e.Rank].CompareAndSwap(nil, e)
	}
	if c.cfg.PeerFailure == FailComm {
		c.lost.CompareAndSwap(nil, e)
	}
	c.eps.PeerLost(e.Rank, e)
	c.kick()
}

// PeerErr is why world rank r can no longer be reached (a
// *rdma.PeerLostError, ErrPeerLost), or nil; ErrPeerOutOfRange for a rank
// outside the world.
func (c *Comm) PeerErr(r int) error {
	if r < 0 || r >= c.size {
		return fmt.Errorf("rank %d of %d: %w", r, c.size, ErrPeerOutOfRange)
	}
	if e := c.lostPeer[r].Load(); e != nil {
		return e
	}
	return nil
}

// PeerFailure is Config.PeerFailure: what a lost rank fails.
func (c *Comm) PeerFailure() FailureMode { return c.cfg.PeerFailure }

// LostPeers lists the world ranks this Comm learned were lost, in rank
// order.
func (c *Comm) LostPeers() []int {
	var out []int
	for r := range c.lostPeer {
		if c.lostPeer[r].Load() != nil {
			out = append(out, r)
		}
	}
	return out
}

// kick wakes every wait blocked on the signal doorbell, so that it looks
// at the Comm's state (closed, a peer lost) at once.
func (c *Comm) kick() {
	if c.busy.Load() == 0 || !c.pin() {
		return
	}
	c.kickMapped()
	c.leave()
}

// kickMapped is kick for a caller that knows the signal region is mapped
// (Close, before its teardown).
func (c *Comm) kickMapped() {
	if c.bell != nil {
		c.bell.Kick()
	}
	if b, ok := c.poller.(rdma.BlockingPoller); ok && b.Blocks() {
		b.Kick() // pins the provider itself
	}
}

// pin holds the Comm's mappings like enter, but also after a peer was
// lost: for kicks, which must reach waiters of a failed Comm, and must not
// touch a doorbell that Close has unmapped. Pair with leave.
func (c *Comm) pin() bool {
	c.busy.Add(1)
	if c.closed.Load() {
		c.busy.Add(-1)
		return false
	}
	return true
}

// kickedBell is the signal doorbell as waits hold it: its Kick, which a
// cancelled context runs from a goroutine of its own at any later moment,
// pins the Comm first (the bell's words live in its signal region).
type kickedBell struct {
	rdma.Doorbell
	c *Comm
}

func (b *kickedBell) Kick() {
	if b.c.pin() {
		b.Doorbell.Kick()
		b.c.leave()
	}
}

// Rank is this rank's index in the world, 0 <= Rank < Size.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// World is the team of every rank.
func (c *Comm) World() Team { return Team{Rank: c.rank, NRanks: c.size, Stride: 1} }

// LSA is the team of ranks whose memory this rank can load and store: on
// a load/store provider (shm, auto) the ranks of this host where every
// host holds one block of consecutive ranks of one size (NCCL's LSA team),
// else this rank alone; Config.LSASize consecutive ranks where set.
func (c *Comm) LSA() Team { return Team{Rank: c.rank % c.lsa, NRanks: c.lsa, Stride: 1} }

// Rail is the team of ranks with this rank's LSA index, one per LSA team
// (NCCL's rail team: NRanks = Size/LSASize, Rank = Rank/LSASize, Stride =
// LSASize).
func (c *Comm) Rail() Team { return Team{Rank: c.rank / c.lsa, NRanks: c.size / c.lsa, Stride: c.lsa} }

// ContextCount is the number of contexts (ginContextCount). Performance
// code spreads work over them: each is its own ordering domain.
func (c *Comm) ContextCount() int { return len(c.contexts) }

// Context returns context i, 0 <= i < ContextCount().
func (c *Comm) Context(i int) (*Context, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if i < 0 || i >= len(c.contexts) {
		return nil, fmt.Errorf("context %d of %d: %w", i, len(c.contexts), ErrUnknownContext)
	}
	return c.contexts[i], nil
}

// Capabilities reports what the Comm's provider supports.
func (c *Comm) Capabilities() rdma.Capabilities { return c.caps }

// Transport is the provider's name.
func (c *Comm) Transport() string { return c.prov.Name() }

// Signals is the number of indexed signals (Config.Signals).
func (c *Comm) Signals() int { return c.cfg.Signals }

// Counters is the number of counters (Config.Counters).
func (c *Comm) Counters() int { return c.cfg.Counters }

// Err is the first lost-peer error this Comm saw, or nil.
func (c *Comm) Err() error {
	if e := c.lost.Load(); e != nil {
		return e
	}
	return nil
}

// Barrier is a control-plane barrier over every rank (the bootstrap's, not
// a one-sided one: see package barrier for that).
func (c *Comm) Barrier(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return c.noteLost(c.boot.Barrier(ctx))
}

// noteLost makes a lost-peer error from the bootstrap the Comm's state at
// once (the bootstrap's OnLost callback may come later), so Err and every
// wait agree with the collective that failed. It returns err.
func (c *Comm) noteLost(err error) error {
	var pl *rdma.PeerLostError
	if errors.As(err, &pl) {
		c.peerLost(pl)
	}
	return err
}

// AllGather is a control-plane all-gather through the bootstrap: every
// rank contributes data (small: descriptors, handles, counts) and gets all
// ranks' contributions by rank. Collective. It is for setup, not for the
// data plane (see package collective for that).
func (c *Comm) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	all, err := c.boot.AllGather(ctx, data)
	return all, c.noteLost(err)
}

// OnPeerLost registers f to be called once per lost rank, with the
// *rdma.PeerLostError that names it (errors.Is(err, ErrPeerLost)), from a
// bootstrap goroutine; for ranks already lost it is called at once. Layers
// above gin use it to turn a lost rank into their own notices (death
// watch's Terminated).
func (c *Comm) OnPeerLost(f func(rank int, err error)) {
	c.boot.OnLost(func(e *rdma.PeerLostError) { f(e.Rank, e) })
}

// ActorSystem is the protoactor-go actor system the Comm's endpoint actors
// live in. Layers that own per-Comm actors (the GPU ring proxies, the
// mailbox actors) spawn them here, so one supervision tree and one
// shutdown cover them; it stops at Close.
func (c *Comm) ActorSystem() *actor.ActorSystem { return c.system }

// SignalWords returns this rank's signal value words, little-endian uint64
// at byte offset 8*s for signal s, for layers that must map them elsewhere
// (transport/gpu registers them with the GPU so kernels wait on gin's own
// signals). Load them with acquire ordering only; change them only through
// gin (puts, ResetSignal). Valid until Close.
func (c *Comm) SignalWords() []byte { return c.signals.Bytes()[:8*c.cfg.Signals] }

// Faults returns the QP faults the endpoints' supervisor recorded.
func (c *Comm) Faults() []endpoint.Fault { return c.eps.Faults() }

// Close releases the Comm's endpoints, windows, provider and bootstrap. It
// is local: peers that still write into this rank's windows write into
// memory they mapped themselves, never into freed memory. Calls after Close
// return ErrClosed.
func (c *Comm) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	// A wait blocked on the doorbell is kicked; one that parks on timers
	// notices the close within one park (Config.Idle.MaxSleep). Nothing
	// else holds mapped memory for long.
	deadline := time.Now().Add(c.cfg.PostTimeout)
	for c.busy.Load() > 0 && time.Now().Before(deadline) {
		c.kickMapped() // this goroutine unmaps, and only after the loop
		time.Sleep(50 * time.Microsecond)
	}
	if n := c.busy.Load(); n > 0 {
		// Unmapping now could crash those calls: leave the memory mapped.
		return fmt.Errorf("close: %d calls still inside the comm after %v; its memory stays mapped", n, c.cfg.PostTimeout)
	}
	return c.teardown()
}

// enter marks a call that touches mapped memory; it fails after Close or
// once a peer was lost. Every successful enter is paired with leave.
func (c *Comm) enter() error {
	c.busy.Add(1)
	if err := c.check(); err != nil {
		c.busy.Add(-1)
		return err
	}
	return nil
}

func (c *Comm) leave() { c.busy.Add(-1) }

func (c *Comm) teardown() error {
	var errs []error
	if c.eps != nil {
		errs = append(errs, c.eps.Close(context.Background()))
	}
	if c.system != nil {
		c.system.Shutdown()
	}
	errs = append(errs, c.prov.Close(), c.boot.Close())
	return errors.Join(errs...)
}
