//go:build ofi && cgo && linux

package ofi

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/internal/pins"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Region is a local memory region of an ofi Provider: anonymous mmap'd
// memory (never Go memory: libfabric keeps its address) registered with
// fi_mr_reg. Bytes, Descriptor and Size are safe for concurrent use; Close
// may race with Posts naming it (they fail with rdma.ErrClosed).
type Region struct {
	p       *Provider
	id      uint64
	size    int
	mem     []byte // the whole mapping; mem[:size] is the region
	mr      mr
	local   bool
	signals bool // counter strategy: the signals region (its words are signal endpoints' counters)
	desc    []byte
	pins    pins.Pins // the progress goroutine applying a signal; Close waits
	// external: mem belongs to the caller (RegisterExternal), who unmaps
	// it; onSignal, if set, runs after each signal add applied to it.
	external bool
	onSignal func()
}

var _ rdma.MemoryRegion = (*Region)(nil)

// Bytes returns the region's memory: exactly Size bytes, zeroed at
// registration; nil after Close.
func (r *Region) Bytes() []byte { return r.pins.Window(r.mem, r.size) }

// Size is the region's length in bytes.
func (r *Region) Size() int { return r.size }

// Descriptor returns a copy of what a peer passes to Import, or nil for a
// LocalOnly region.
func (r *Region) Descriptor() []byte { return bytes.Clone(r.desc) }

// Close deregisters the region. Peers' later writes to it fail at the
// peers. The memory stays mapped until the provider closes (libfabric may
// still be placing an earlier write into it), but Bytes returns nil. A
// second Close returns rdma.ErrClosed.
func (r *Region) Close() error {
	if err := r.close(); err != nil {
		return err
	}
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if rs := *p.regions.Load(); r.id < uint64(len(rs)) && rs[r.id] == r {
		next := append([]*Region(nil), rs...)
		next[r.id] = nil
		p.regions.Store(&next)
	}
	if r.external {
		return nil
	}
	if p.unmapDone {
		return unmap(r.mem)
	}
	p.unmapped = append(p.unmapped, r.mem)
	return nil
}

// close deregisters without touching the provider's tables.
func (r *Region) close() error {
	if !r.pins.Close() {
		return fmt.Errorf("ofi: close region %d: %w", r.id, rdma.ErrClosed)
	}
	if err := r.mr.close(); err != nil {
		return fmt.Errorf("ofi: close region %d: %w", r.id, err)
	}
	return nil
}

// ptr is the address of byte off of the region (for libfabric calls).
func (r *Region) ptr(off int) unsafe.Pointer {
	return unsafe.Add(unsafe.Pointer(unsafe.SliceData(r.mem)), off)
}

func (r *Region) base() uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))) }

// RegisterMemory allocates size bytes of zeroed memory (an anonymous
// mapping, at least one page) and registers it: for local access only
// with rdma.LocalOnly, else for remote reads and writes too, with a
// Descriptor peers pass to Import. The domain's mr_mode is honoured:
// FI_MR_PROV_KEY (the key comes from fi_mr_key), FI_MR_VIRT_ADDR (peers
// address it by virtual address), FI_MR_ENDPOINT (bound to the endpoint
// and enabled), FI_MR_RMA_EVENT (registered with FI_RMA_EVENT, enabled),
// FI_MR_LOCAL (its fi_mr_desc goes with every post naming it).
//
// Under the counter strategy the first exported region whose size is that
// of a signals region of at most MaxSignals signals (rdma.SignalCount) is
// taken as gin's signals region: one signal endpoint with a remote-write
// counter is opened per signal and named in its descriptor.
//
// It returns an error for a negative size or unknown flags, a
// *FabricError from fi_mr_reg, and rdma.ErrClosed after Close.
func (p *Provider) RegisterMemory(size int, flags rdma.RegionFlags) (rdma.MemoryRegion, error) {
	if size < 0 {
		return nil, fmt.Errorf("ofi: register %d bytes: negative size", size)
	}
	if flags&^rdma.LocalOnly != 0 {
		return nil, fmt.Errorf("ofi: register: flags %#x: %w", uint32(flags), rdma.ErrNotSupported)
	}
	if !p.pins.Pin() {
		return nil, fmt.Errorf("ofi: register: %w", rdma.ErrClosed)
	}
	defer p.pins.Unpin()
	r, err := p.register(size, flags&rdma.LocalOnly != 0, false)
	if err != nil {
		return nil, err
	}
	return r, nil
}

var _ rdma.ExternalRegistrar = (*Provider)(nil)

// RegisterExternal registers mem, memory the caller mapped and keeps mapped
// until this provider's Close (rdma.ExternalRegistrar), as RegisterMemory
// registers its own: fi_mr_reg(3) on mem, honouring the domain's mr_mode,
// and under the counter strategy taken as the signals region by its size.
// The region's Bytes are mem; its Close and the provider's Close never
// unmap it. onSignal, if not nil, runs on the progress path after each
// signal add applied to a word of mem (the "auto" provider rings the shm
// doorbell of the same memory with it).
//
// It returns an error for an empty mem or unknown flags, a *FabricError
// from fi_mr_reg, and rdma.ErrClosed after Close.
func (p *Provider) RegisterExternal(mem []byte, flags rdma.RegionFlags, onSignal func()) (rdma.MemoryRegion, error) {
	if len(mem) == 0 {
		return nil, errors.New("ofi: register external memory: empty")
	}
	if flags&^rdma.LocalOnly != 0 {
		return nil, fmt.Errorf("ofi: register: flags %#x: %w", uint32(flags), rdma.ErrNotSupported)
	}
	if !p.pins.Pin() {
		return nil, fmt.Errorf("ofi: register: %w", rdma.ErrClosed)
	}
	defer p.pins.Unpin()
	r, err := p.registerMem(mem, len(mem), flags&rdma.LocalOnly != 0, false, true, onSignal)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// register maps and registers a region; ctrl marks the control region.
func (p *Provider) register(size int, local, ctrl bool) (*Region, error) {
	n := max(size, 1)
	n = (n + unix.Getpagesize() - 1) &^ (unix.Getpagesize() - 1)
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("ofi: register %d bytes: mmap: %w", size, err)
	}
	r, err := p.registerMem(mem, size, local, ctrl, false, nil)
	if err != nil {
		return nil, errors.Join(err, unmap(mem))
	}
	return r, nil
}

// registerMem registers size bytes at the start of mem. Its errors leave
// mem mapped: the caller owns it until the region exists. external marks
// the caller's memory (RegisterExternal), which Close leaves mapped.
func (p *Provider) registerMem(mem []byte, size int, local, ctrl, external bool, onSignal func()) (*Region, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("ofi: register: %w", rdma.ErrClosed)
	}
	p.nextID++
	id := p.nextID
	nsig, signals := rdma.SignalCount(size)
	signals = signals && p.strat == counter && !local && !ctrl && p.sigReg.Load() == nil && nsig <= p.scMax
	p.mu.Unlock()

	r := &Region{p: p, id: id, size: size, mem: mem, local: local, signals: signals, external: external, onSignal: onSignal}
	access := fiRead | fiWrite
	if !local {
		access |= fiRemoteRead | fiRemoteWrite
	}
	var err error
	r.mr, err = p.f.regMR(mem, access, id, p.mrm.endpoint, p.mrm.rmaEvent && !local)
	if err != nil {
		return nil, fmt.Errorf("ofi: register %d bytes: %w", size, err)
	}
	var scNames [][]byte
	if signals {
		if scNames, err = p.openSignalEndpoints(r, nsig); err != nil {
			return nil, errors.Join(fmt.Errorf("ofi: register signals region: %w", err), r.mr.close())
		}
	}
	if !local {
		d := descriptor{rank: p.cfg.Rank, strat: p.strat, signals: signals, id: id, size: uint64(size), base: r.base(),
			key: r.mr.key, name: p.name, scNames: scNames}
		if ctrl {
			d.ctrlBase, d.ctrlKey = r.base(), r.mr.key
		} else {
			d.ctrlBase, d.ctrlKey = p.ctrl.base(), p.ctrl.mr.key
		}
		r.desc = d.encode()
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.Join(fmt.Errorf("ofi: register: %w", rdma.ErrClosed), r.mr.close())
	}
	rs := *p.regions.Load()
	next := make([]*Region, max(len(rs), int(id)+1))
	copy(next, rs)
	next[id] = r
	p.regions.Store(&next)
	return r, nil
}

func unmap(mem []byte) error {
	if err := unix.Munmap(mem); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// remoteRegion is a peer's region made addressable by Import: its key and
// base, and the peer's endpoint (in the provider's peer table).
type remoteRegion struct {
	p       *Provider
	peer    int
	id      uint64
	size    int
	base    uint64
	key     uint64
	signals bool
	closed  atomic.Bool
}

var _ rdma.RemoteRegion = (*remoteRegion)(nil)

// Peer is the owner's world rank.
func (r *remoteRegion) Peer() int { return r.peer }

// Size is the region's length in bytes.
func (r *remoteRegion) Size() int { return r.size }

// Close drops the import; Posts naming it afterwards fail with
// rdma.ErrClosed. A second Close returns rdma.ErrClosed.
func (r *remoteRegion) Close() error {
	if r.closed.Swap(true) {
		return fmt.Errorf("ofi: close import of rank %d's region %d: %w", r.peer, r.id, rdma.ErrClosed)
	}
	r.p.mu.Lock()
	delete(r.p.imports, r)
	r.p.mu.Unlock()
	return nil
}

// addr is the target address of byte off (offset or virtual address, per
// FI_MR_VIRT_ADDR).
func (r *remoteRegion) addr(off int) uint64 { return r.p.mrm.targetAddr(r.base, off) }

// Import makes a peer's region a WQE target from its descriptor. The first
// descriptor of a peer also brings its endpoint address, which goes into
// the address vector (the bootstrap's exchange of descriptors is the
// address exchange), and a zero-byte write to it starts the connection, so
// its cost (tens of ms on tcp) is paid here rather than by the first put.
//
// It returns an error for a malformed descriptor, one of another rank or
// of a rank using another signal strategy, an endpoint address that
// changed, a *FabricError from fi_av_insert, and rdma.ErrClosed after
// Close.
func (p *Provider) Import(peer int, desc []byte) (rdma.RemoteRegion, error) {
	if peer < 0 || peer >= p.cfg.Size {
		return nil, fmt.Errorf("ofi: import: peer %d of size %d: invalid", peer, p.cfg.Size)
	}
	d, err := decodeDescriptor(desc)
	if err != nil {
		return nil, fmt.Errorf("ofi: import from rank %d: %w", peer, err)
	}
	if d.rank != peer {
		return nil, fmt.Errorf("ofi: import from rank %d: %w: region of rank %d", peer, errBadDescriptor, d.rank)
	}
	if d.strat != p.strat {
		return nil, fmt.Errorf("ofi: import from rank %d: it uses %s signals, this rank %s (set %s alike on every rank)", peer, d.strat, p.strat, EnvSignals)
	}
	if d.size > uint64(1)<<50 {
		return nil, fmt.Errorf("ofi: import from rank %d: %w: size %d", peer, errBadDescriptor, d.size)
	}
	if !p.pins.Pin() {
		return nil, fmt.Errorf("ofi: import: %w", rdma.ErrClosed)
	}
	defer p.pins.Unpin()
	if err := p.learnPeer(peer, &d); err != nil {
		return nil, fmt.Errorf("ofi: import from rank %d: %w", peer, err)
	}
	r := &remoteRegion{p: p, peer: peer, id: d.id, size: int(d.size), base: d.base, key: d.key, signals: d.signals}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("ofi: import: %w", rdma.ErrClosed)
	}
	p.imports[r] = struct{}{}
	return r, nil
}

// learnPeer records the peer's endpoint and control region from d (once),
// and its signal endpoints if d describes its signals region.
func (p *Provider) learnPeer(peer int, d *descriptor) error {
	ps := &p.peers[peer]
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.known.Load() {
		if string(ps.name) != string(d.name) {
			return fmt.Errorf("endpoint address changed (rank restarted?): %w", errBadDescriptor)
		}
	} else {
		a, err := p.f.avInsert(d.name)
		if err != nil {
			return err
		}
		ps.name, ps.addr, ps.ctrlBase, ps.ctrlKey = d.name, a, d.ctrlBase, d.ctrlKey
		ps.modes = map[modeKey]uint64{}
		ps.known.Store(true)
		p.connect(peer, ps)
	}
	if d.signals && ps.scAddrs.Load() == nil {
		addrs := make([]uint64, len(d.scNames))
		for i, n := range d.scNames {
			a, err := p.f.avInsert(n)
			if err != nil {
				return fmt.Errorf("signal endpoint %d: %w", i, err)
			}
			addrs[i] = a
		}
		ps.scAddrs.Store(&addrs)
	}
	return nil
}
