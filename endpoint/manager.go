package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/pins"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// DefaultPostTimeout is how long a post waits for SQ room before
// ErrRingFull when Config.PostTimeout is zero (and gin.Config's).
const DefaultPostTimeout = 10 * time.Second

// Config sizes a Manager.
type Config struct {
	Contexts    int           // gin contexts (ordering domains); default 1
	QPsPerPeer  int           // m: QPs per peer shared by the contexts (context c uses QP c%m); default 1
	Depth       int           // SQ entries per endpoint, a power of two; default 512
	Signals     int           // signal indices (bound on SCEndpoints per group)
	PostTimeout time.Duration // longest wait for SQ room before ErrRingFull; default 10 s
	Idle        idle.Strategy // pacing of every wait; default idle.Default
	// System hosts the endpoint actors. Required.
	System *actor.ActorSystem
	// OnFault, if set, is called by the supervisor for each endpoint that
	// failed (from an actor goroutine).
	OnFault func(Fault)
}

func (c *Config) setDefaults() error {
	if c.Contexts == 0 {
		c.Contexts = 1
	}
	if c.QPsPerPeer == 0 {
		c.QPsPerPeer = 1
	}
	if c.Depth == 0 {
		c.Depth = 512
	}
	if c.PostTimeout == 0 {
		c.PostTimeout = DefaultPostTimeout
	}
	if c.Idle == (idle.Strategy{}) {
		c.Idle = idle.Default
	}
	switch {
	case c.System == nil:
		return errors.New("endpoint config: no actor system")
	case c.Contexts < 0 || c.QPsPerPeer < 0 || c.Signals < 0:
		return fmt.Errorf("endpoint config: negative count (contexts %d, qps %d, signals %d)", c.Contexts, c.QPsPerPeer, c.Signals)
	case c.Depth < 0 || c.Depth&(c.Depth-1) != 0 || c.Depth > 1<<20:
		return fmt.Errorf("endpoint config: depth %d: want a power of two up to 2^20", c.Depth)
	}
	return nil
}

// Manager owns one rank's endpoints: groups per (context, peer), the QP pool
// they share, the PutValue slot pool, and the actor that supervises them.
//
// Lock order: Group.mu -> Manager.mu -> qpPool.mu -> sharedQP.postMu. No
// lock is held while waiting for room, completions or actors except
// Group.mu while an endpoint actor starts.
type Manager struct {
	cfg    Config
	prov   rdma.Provider
	poller rdma.Poller // prov, where waits can drive its progress; else nil
	system *actor.ActorSystem
	size   int
	sup    *actor.PID
	qps    qpPool
	slots  slotPool
	closed atomic.Bool
	done   chan struct{} // closed by Close: ends waits for actors
	// slotPins keeps the PutValue slot region mapped under a staging copy
	// that races Close.
	slotPins pins.Pins

	mu     sync.Mutex // guards groups and faults
	groups map[[2]int]*Group
	faults []Fault
}

// NewManager starts the endpoint supervisor for a rank of a world of size
// ranks on prov.
func NewManager(prov rdma.Provider, size int, cfg Config) (*Manager, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	m := &Manager{
		cfg:    cfg,
		prov:   prov,
		system: cfg.System,
		size:   size,
		qps:    qpPool{prov: prov, m: cfg.QPsPerPeer, qps: map[[2]int]*sharedQP{}},
		slots:  slotPool{prov: prov, depth: cfg.Depth},
		groups: map[[2]int]*Group{},
		done:   make(chan struct{}),
	}
	m.poller, _ = prov.(rdma.Poller)
	props := actor.PropsFromProducer(func() actor.Actor { return supervisorActor{} },
		actor.WithSupervisor(faultStrategy{m}))
	m.sup = cfg.System.Root.Spawn(props)
	return m, nil
}

// Group returns the endpoints of (context ctx, peer), creating the data
// endpoint on first use.
func (m *Manager) Group(ctx, peer int) (*Group, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if ctx < 0 || ctx >= m.cfg.Contexts || peer < 0 || peer >= m.size {
		return nil, fmt.Errorf("endpoint group: context %d of %d, peer %d of %d: out of range", ctx, m.cfg.Contexts, peer, m.size)
	}
	key := [2]int{ctx, peer}
	m.mu.Lock()
	g := m.groups[key]
	m.mu.Unlock()
	if g != nil {
		return g, nil
	}
	data, err := m.newEndpoint(ctx, peer, -1)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[key]; g != nil { // lost a race: keep the first
		m.system.Root.Stop(data.pid.Load())
		return g, nil
	}
	g = &Group{m: m, ctx: ctx, peer: peer, sc: make([]atomic.Pointer[Endpoint], m.cfg.Signals)}
	data.group = g
	all := []*Endpoint{data}
	g.all.Store(&all)
	m.groups[key] = g
	data.adopted()
	return g, nil
}

// Groups returns the groups of context ctx created so far.
func (m *Manager) Groups(ctx int) []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	return withFirst(m.groups, ctx)
}

// withFirst returns the values of m whose key starts with first, in map
// order.
func withFirst[V any](m map[[2]int]V, first int) []V {
	var out []V
	for k, v := range m {
		if k[0] == first {
			out = append(out, v)
		}
	}
	return out
}

// newEndpoint connects (or shares) a QP, takes a slot slice and starts the
// endpoint's actor.
func (m *Manager) newEndpoint(ctx, peer, sig int) (*Endpoint, error) {
	if m.closed.Load() {
		return nil, fmt.Errorf("start endpoint to rank %d: %w", peer, ErrClosed)
	}
	e := &Endpoint{m: m, peer: peer, signal: sig, sq: newSQ(m.cfg.Depth)}
	mr, off, err := m.slots.take()
	if err != nil {
		return nil, err
	}
	e.slotMR, e.slotOff = mr, off
	e.qp, e.route, err = m.qps.acquire(peer, ctx, e)
	if err != nil {
		return nil, err
	}
	res, err := m.await(m.system.Root.RequestFuture(m.sup, spawnEndpoint{e}, m.cfg.PostTimeout))
	if err != nil {
		m.qps.release(e.qp, e.route)
		if m.closed.Load() { // the supervisor stopped under the request
			err = ErrClosed
		}
		return nil, fmt.Errorf("start endpoint actor to rank %d: %w", peer, err)
	}
	e.pid.Store(res.(*actor.PID))
	return e, nil
}

// await is f's result, or ErrClosed as soon as Close begins: a request to
// the supervisor that Close stopped may get no answer until its timeout.
func (m *Manager) await(f *actor.Future) (any, error) {
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f.Result()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-m.done:
		return nil, ErrClosed
	}
}

// Progress reports the completions every QP of the Manager has found, to
// their endpoints (their SQs and the counters of their local actions), and
// returns how many. A QP another goroutine is posting on or driving is
// skipped: that one reports. It never blocks; waits on counters call it
// between polls of a Poller provider, whose completions are otherwise
// reported by the endpoint actors, lazily.
func (m *Manager) Progress() int {
	// Under qpPool.mu (lock order qpPool.mu -> sharedQP.postMu, and
	// progress only tries the latter): no list to copy on a hot wait.
	m.qps.mu.Lock()
	defer m.qps.mu.Unlock()
	n := 0
	for _, s := range m.qps.qps {
		k, _ := s.progress()
		n += k
	}
	return n
}

// dropEndpoint gives the endpoint's QP reference back (its actor stopped).
func (m *Manager) dropEndpoint(e *Endpoint) {
	m.qps.release(e.qp, e.route)
}

// PeerLost fails every QP to peer with cause: later posts to it return a
// *rdma.QPError wrapping cause, and the endpoints' actors fail to the
// supervisor.
func (m *Manager) PeerLost(peer int, cause error) {
	for _, s := range m.qps.peerQPs(peer) {
		s.fail(cause)
	}
}

func (m *Manager) recordFault(child *actor.PID, reason interface{}) {
	err, ok := reason.(error)
	if !ok {
		err = fmt.Errorf("endpoint actor panic: %v", reason)
	}
	f := Fault{Err: err, Peer: -1}
	m.mu.Lock()
	for _, g := range m.groups {
		for _, e := range *g.all.Load() {
			if pid := e.pid.Load(); pid != nil && pid.Equal(child) {
				f.Peer, f.Route = e.peer, e.routeName()
			}
		}
	}
	m.faults = append(m.faults, f)
	m.mu.Unlock()
	if m.cfg.OnFault != nil {
		m.cfg.OnFault(f)
	}
}

// Faults returns the faults the supervisor recorded so far.
func (m *Manager) Faults() []Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Fault(nil), m.faults...)
}

// stopWait bounds how long Close waits for the endpoint actors to stop.
const stopWait = 500 * time.Millisecond

// Close stops every endpoint actor (their QPs close with the last
// reference) and releases the slot pool. Posts after Close return ErrClosed
// or the QP's closed error. It waits up to timeout for the actors.
func (m *Manager) Close(ctx context.Context) error {
	if !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(m.done)
	// Stopping waits for the actors for stopWait at most: one busy in a
	// spawn or a progress loop must not hold Close (their QPs are closed
	// below, which ends that work).
	fut := m.system.Root.StopFuture(m.sup)
	stopped := make(chan error, 1)
	go func() { stopped <- fut.Wait() }()
	var err error
	select {
	case err = <-stopped:
		if err != nil {
			err = fmt.Errorf("stop endpoint actors: %w", err)
		}
	case <-time.After(stopWait):
	}
	// Actors that did not stop in time leave QPs behind: close them here.
	m.qps.mu.Lock()
	left := make([]*sharedQP, 0, len(m.qps.qps))
	for _, s := range m.qps.qps {
		left = append(left, s)
	}
	m.qps.qps = map[[2]int]*sharedQP{}
	m.qps.mu.Unlock()
	errs := []error{err}
	for _, s := range left {
		errs = append(errs, s.close())
	}
	m.slotPins.Close()
	errs = append(errs, m.slots.close())
	_ = ctx
	return errors.Join(errs...)
}
