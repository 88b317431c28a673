package hybrid

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
)

func init() { rdma.Register(Name, Open) }

// Name is the provider's registered name (RDMACTOR_TRANSPORT=auto).
const Name = "auto"

// Provider is one rank's composite of shm (peers on its host) and ofi
// (peers on other hosts), the concrete type behind what Open returns for a
// job over several hosts. It is safe for concurrent use; each QP follows
// the caller duties of package rdma.
type Provider struct {
	cfg  rdma.Config
	shm  rdma.Provider
	ofi  rdma.Provider
	ext  rdma.ExternalRegistrar // ofi
	poll rdma.Poller            // ofi, driven by the QPs' Progress; nil if it is none
	// resume hands ofi's CQ back to its progress goroutine before a waiter
	// sleeps on a doorbell (ofi's Resume); a no-op where ofi has none.
	resume func()
	caps   rdma.Capabilities

	mu     sync.Mutex
	closed bool
}

var _ rdma.Provider = (*Provider)(nil)

// Open opens the provider for cfg.Rank. With every rank on one host by
// cfg.Hosts (or Hosts unknown) it returns the shm provider itself. Else it
// opens ofi and shm and returns a *Provider; in a build without the ofi
// provider that fails with an error that names each host and its ranks
// and wraps ofi's *rdma.UnsupportedError (rdma.ErrNotSupported).
//
// It returns an error for a cfg.Hosts whose length is not cfg.Size, and
// the errors of the two providers' Open.
func Open(cfg rdma.Config) (rdma.Provider, error) {
	if len(cfg.Hosts) != 0 && len(cfg.Hosts) != cfg.Size {
		return nil, fmt.Errorf("auto: open: %d host ids for %d ranks", len(cfg.Hosts), cfg.Size)
	}
	if oneHost(cfg.Hosts) {
		return rdma.Open(shm.Name, cfg)
	}
	o, err := rdma.Open(ofi.Name, cfg)
	if err != nil {
		return nil, fmt.Errorf("auto: rank %d: ranks on other hosts need the ofi provider (%s): %w", cfg.Rank, hostList(cfg.Hosts), err)
	}
	ext, ok := o.(rdma.ExternalRegistrar)
	if !ok {
		return nil, errors.Join(&rdma.UnsupportedError{Provider: o.Name(), Feature: "registration of shm memory (rdma.ExternalRegistrar)"}, o.Close())
	}
	s, err := rdma.Open(shm.Name, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("auto: %w", err), o.Close())
	}
	p := &Provider{cfg: cfg, shm: s, ofi: o, ext: ext, resume: func() {}, caps: both(s.Capabilities(), o.Capabilities())}
	p.poll, _ = o.(rdma.Poller)
	if r, ok := o.(interface{ Resume() }); ok {
		p.resume = r.Resume
	}
	return p, nil
}

// SpinPoll reads ofi's CQ once for a gin wait that spins before it
// sleeps on a doorbell (rdma.SpinPoller): a signal from another host that
// arrives meanwhile is applied by the waiter, with no hop through ofi's
// progress goroutine. It returns how much it handled; 0 where ofi is not a
// Poller.
func (p *Provider) SpinPoll() int {
	if p.poll == nil {
		return 0
	}
	return p.poll.Poll()
}

// oneHost reports whether every entry of hosts is the same (true for none).
func oneHost(hosts []string) bool {
	for _, h := range hosts {
		if h != hosts[0] {
			return false
		}
	}
	return true
}

// hostList names each host and its ranks: "host A: ranks [0 1]; host B:
// ranks [2 3]", hosts in order of their first rank.
func hostList(hosts []string) string {
	ranks := map[string][]int{}
	var order []string
	for r, h := range hosts {
		if ranks[h] == nil {
			order = append(order, h)
		}
		ranks[h] = append(ranks[h], r)
	}
	sort.SliceStable(order, func(i, j int) bool { return ranks[order[i]][0] < ranks[order[j]][0] })
	parts := make([]string, len(order))
	for i, h := range order {
		parts[i] = fmt.Sprintf("host %q: ranks %v", h, ranks[h])
	}
	return strings.Join(parts, "; ")
}

// both is what a job may count on whichever provider carries a peer.
func both(a, b rdma.Capabilities) rdma.Capabilities {
	return rdma.Capabilities{
		StrongSignals: a.StrongSignals && b.StrongSignals,
		MaxSignals:    min(a.MaxSignals, b.MaxSignals),
		MaxPutSize:    min(a.MaxPutSize, b.MaxPutSize),
		SignalAdd:     a.SignalAdd && b.SignalAdd,
		VASignals:     a.VASignals && b.VASignals,
		LoadStore:     a.LoadStore || b.LoadStore, // within a host: gin's LSA team
		Get:           a.Get && b.Get,
		Inline:        a.Inline && b.Inline,
	}
}

// Name returns "auto".
func (p *Provider) Name() string { return Name }

// Capabilities are those both providers offer (see the package doc).
func (p *Provider) Capabilities() rdma.Capabilities { return p.caps }

// Local reports whether peer is on this rank's host (served by shm).
func (p *Provider) Local(peer int) bool { return p.cfg.SameHost(p.cfg.Rank, peer) }

// Providers returns the shm and the ofi provider the composite drives,
// for inspection (an ofi Fabric name, its Stats).
func (p *Provider) Providers() (shmProv, ofiProv rdma.Provider) { return p.shm, p.ofi }

// RegisterMemory registers size bytes of zeroed memory with both
// providers: a shm region (a shared mapping that this host's peers map)
// and that mapping again with ofi (rdma.ExternalRegistrar), whose progress
// rings the shm doorbell after each signal it applies. Without
// rdma.LocalOnly its Descriptor carries both halves. Size 0 is allowed.
// The result is a *Region.
//
// It returns an error for a negative size or unknown flags, either
// provider's registration error, and rdma.ErrClosed after Close.
func (p *Provider) RegisterMemory(size int, flags rdma.RegionFlags) (rdma.MemoryRegion, error) {
	if size < 0 {
		return nil, fmt.Errorf("auto: register %d bytes: negative size", size)
	}
	if flags&^rdma.LocalOnly != 0 {
		return nil, fmt.Errorf("auto: register: flags %#x: %w", uint32(flags), rdma.ErrNotSupported)
	}
	if p.isClosed() {
		return nil, fmt.Errorf("auto: register: %w", rdma.ErrClosed)
	}
	// Always a shared mapping, LocalOnly too: ofi needs memory outside the
	// Go heap, and shm's LocalOnly regions are Go memory.
	s, err := p.shm.RegisterMemory(max(size, 1), 0)
	if err != nil {
		return nil, fmt.Errorf("auto: %w", err)
	}
	r := &Region{size: size, shm: s, local: flags&rdma.LocalOnly != 0}
	var ring func()
	if b, ok := s.(rdma.Belled); ok && !r.local {
		ring = ringOf(b.Doorbell())
		r.bell = resumingBell{b.Doorbell(), p.resume}
	}
	if r.ofi, err = p.ext.RegisterExternal(s.Bytes(), flags, ring); err != nil {
		return nil, errors.Join(fmt.Errorf("auto: %w", err), s.Close())
	}
	if !r.local {
		r.desc = encode(s.Descriptor(), r.ofi.Descriptor())
	}
	return r, nil
}

// ringOf is how the ofi side rings bell: Ring (a load when nobody waits)
// where the doorbell has it, as shm's futex doorbell does, else Kick.
func ringOf(bell rdma.Doorbell) func() {
	if r, ok := bell.(interface{ Ring() }); ok {
		return r.Ring
	}
	return bell.Kick
}

// resumingBell is a region's shm doorbell as waiters hold it: before a
// waiter sleeps, ofi's progress goroutine is told to read the CQ (it may
// stand back for the Polls of the QPs' Progress), since its signal adds
// are what rings the bell for peers on other hosts.
type resumingBell struct {
	rdma.Doorbell
	resume func()
}

func (b resumingBell) Sleep(ticket uint32, d time.Duration) {
	b.resume()
	b.Doorbell.Sleep(ticket, d)
}

// Import maps a peer's region from its Descriptor: the shm half for a
// peer on this host, the ofi half for one on another. The result is that
// provider's import.
//
// It returns an error for a malformed descriptor, the chosen provider's
// Import errors, and rdma.ErrClosed after Close.
func (p *Provider) Import(peer int, desc []byte) (rdma.RemoteRegion, error) {
	if peer < 0 || peer >= p.cfg.Size {
		return nil, fmt.Errorf("auto: import: peer %d of size %d: invalid", peer, p.cfg.Size)
	}
	s, o, err := decode(desc)
	if err != nil {
		return nil, fmt.Errorf("auto: import from rank %d: %w", peer, err)
	}
	if p.isClosed() {
		return nil, fmt.Errorf("auto: import: %w", rdma.ErrClosed)
	}
	if p.Local(peer) {
		return p.shm.Import(peer, s)
	}
	return p.ofi.Import(peer, o)
}

// Connect opens a QP to peer through shm (same host) or ofi (another
// host). Its Post hands each WQE's Local *Region to that provider as its
// own half. It returns the provider's Connect errors, and rdma.ErrClosed
// after Close.
func (p *Provider) Connect(peer int, cq rdma.CompletionHandler) (rdma.QP, error) {
	if p.isClosed() {
		return nil, fmt.Errorf("auto: connect: %w", rdma.ErrClosed)
	}
	local := p.Local(peer)
	prov := p.ofi
	if local {
		prov = p.shm
	}
	q, err := prov.Connect(peer, cq)
	if err != nil {
		return nil, err
	}
	x := &qp{QP: q, viaOFI: !local}
	if !local {
		x.poll = p.poll
	}
	return x, nil
}

func (p *Provider) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Close closes ofi first (its progress stops applying signals and ringing
// doorbells), then shm, which unmaps every region. A second Close returns
// rdma.ErrClosed.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("auto: close: %w", rdma.ErrClosed)
	}
	p.closed = true
	p.mu.Unlock()
	return errors.Join(p.ofi.Close(), p.shm.Close())
}

// Region is a region of the composite: one shared mapping registered with
// shm and with ofi. Bytes, Descriptor and Doorbell are safe for concurrent
// use; Close may race with Posts naming it (see the package doc).
type Region struct {
	size   int
	shm    rdma.MemoryRegion
	ofi    rdma.MemoryRegion
	bell   rdma.Doorbell // shm's; nil for LocalOnly
	local  bool
	desc   []byte
	closed atomic.Bool
}

var (
	_ rdma.MemoryRegion = (*Region)(nil)
	_ rdma.Belled       = (*Region)(nil)
)

// Bytes returns the region's memory, exactly its size; nil after Close.
func (r *Region) Bytes() []byte {
	if r.closed.Load() {
		return nil
	}
	b := r.shm.Bytes()
	if b == nil {
		return nil
	}
	return b[:r.size:r.size]
}

// Descriptor returns a copy of what a peer passes to Import (both halves),
// or nil for a LocalOnly region.
func (r *Region) Descriptor() []byte { return bytes.Clone(r.desc) }

// Doorbell is the shm doorbell of the mapping, rung by shm peers and by
// the ofi progress after each signal add to a word of the region; nil for
// a LocalOnly region. Use it only until the provider's Close.
func (r *Region) Doorbell() rdma.Doorbell { return r.bell }

// Unlink removes the shm half's file name where it has one (named mode:
// shm.Unlinker); gin calls it once every peer has imported.
func (r *Region) Unlink() error {
	if u, ok := r.shm.(shm.Unlinker); ok {
		return u.Unlink()
	}
	return nil
}

// Close deregisters the ofi half; Posts naming the region afterwards fail
// with rdma.ErrClosed. The mapping stays until the provider's Close. A
// second Close returns rdma.ErrClosed.
func (r *Region) Close() error {
	if r.closed.Swap(true) {
		return fmt.Errorf("auto: close region: %w", rdma.ErrClosed)
	}
	if err := r.ofi.Close(); err != nil {
		return fmt.Errorf("auto: close region: %w", err)
	}
	return nil
}

// half is r's region of one provider.
func (r *Region) half(viaOFI bool) rdma.MemoryRegion {
	if viaOFI {
		return r.ofi
	}
	return r.shm
}

// qp is a QP of one of the two providers, whose Post swaps each WQE's
// Local *Region for that provider's half.
type qp struct {
	rdma.QP
	viaOFI bool
	poll   rdma.Poller // ofi, for an ofi QP: Progress reads its CQ
	buf    []rdma.WQE  // Post's copy; Post is one goroutine at a time (caller duty 1)
}

// Progress reads ofi's CQ first on an ofi QP, as the endpoints' waits for
// completions (SQ room, Flush, counters) drive a Poller provider: a write
// of a manual-progress fabric moves only while its CQ is read. Then it
// reports the QP's completions.
func (q *qp) Progress() (int, error) {
	if q.poll != nil {
		q.poll.Poll()
	}
	return q.QP.Progress()
}

// Post translates wqes and posts them; a WQE naming a closed *Region is
// rejected with a *rdma.WQEError wrapping rdma.ErrClosed, after the WQEs
// before it were posted.
func (q *qp) Post(wqes []rdma.WQE) error {
	q.buf = q.buf[:0]
	bad := -1
	for i := range wqes {
		w := wqes[i]
		if r, ok := w.Local.(*Region); ok {
			if r.closed.Load() {
				bad = i
				break
			}
			w.Local = r.half(q.viaOFI)
		}
		q.buf = append(q.buf, w)
	}
	if len(q.buf) > 0 {
		if err := q.QP.Post(q.buf); err != nil {
			return err
		}
	}
	if bad >= 0 {
		return &rdma.WQEError{Index: bad, Err: fmt.Errorf("auto: local region: %w", rdma.ErrClosed)}
	}
	return nil
}

// The descriptor: "rdhy", a version byte, the shm half's length (u32,
// little endian), the shm half, then the ofi half.
const (
	descMagic   = "rdhy"
	descVersion = 1
	descFixed   = 9
)

var errBadDescriptor = errors.New("malformed auto descriptor")

func encode(s, o []byte) []byte {
	b := make([]byte, descFixed, descFixed+len(s)+len(o))
	copy(b, descMagic)
	b[4] = descVersion
	binary.LittleEndian.PutUint32(b[5:], uint32(len(s)))
	return append(append(b, s...), o...)
}

// decode splits a descriptor into its shm and ofi halves; a malformed one
// is an error wrapping errBadDescriptor.
func decode(b []byte) (s, o []byte, err error) {
	if len(b) < descFixed || string(b[:4]) != descMagic {
		return nil, nil, fmt.Errorf("%w: %d bytes without the %q header", errBadDescriptor, len(b), descMagic)
	}
	if b[4] != descVersion {
		return nil, nil, fmt.Errorf("%w: version %d, want %d", errBadDescriptor, b[4], descVersion)
	}
	n := binary.LittleEndian.Uint32(b[5:])
	if uint64(n) > uint64(len(b)-descFixed) {
		return nil, nil, fmt.Errorf("%w: shm half of %d bytes in %d", errBadDescriptor, n, len(b)-descFixed)
	}
	return b[descFixed : descFixed+int(n)], b[descFixed+int(n):], nil
}
