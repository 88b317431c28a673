package shm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

func init() { rdma.Register(Name, Open) }

// Name is the provider's registered name.
const Name = "shm"

// Capabilities of shm: WQEs execute inside Post as a copy and a
// sequentially-consistent atomic add, on one host.
var capabilities = rdma.Capabilities{
	StrongSignals: true,
	MaxSignals:    1 << 16,
	MaxPutSize:    1 << 30,
	SignalAdd:     true,
	VASignals:     true,
	LoadStore:     true,
	Get:           true,
	Inline:        true,
}

// Provider is one rank's shm NIC, the concrete type behind the
// rdma.Provider that Open returns. It is safe for concurrent use; each QP
// follows the caller duties of package rdma.
//
// Lock order: Provider.mu -> Region.mu (Import of an own region). Region
// and import Close take their own lock, release it, then Provider.mu.
type Provider struct {
	cfg   rdma.Config
	dir   string
	files fileMode // how this rank's exported regions are shared (EnvFiles)

	mu      sync.Mutex
	closed  bool
	seq     uint64 // last region sequence number handed out
	regions map[uint64]*Region
	imports map[*remoteRegion]struct{}
	qps     map[*qp]struct{}
}

var (
	_ rdma.Provider = (*Provider)(nil)
	_ Unlinker      = (*Provider)(nil)
)

// Open opens the shm provider for cfg.Rank. cfg.Job names the job's
// exported regions and must be 1 to 200 bytes of [A-Za-z0-9._-]; it must be
// unique per job, since in named mode two live jobs of one name collide on
// file names (RegisterMemory then fails: the file exists). EnvFiles, read
// here, selects memfd (default) or named files for the regions this rank
// exports. Several providers may live in one process (goroutine ranks),
// each with its own Rank.
//
// Open returns an error for an invalid job name, rank or EnvFiles value.
func Open(cfg rdma.Config) (rdma.Provider, error) {
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("shm: open: rank %d of size %d: invalid", cfg.Rank, cfg.Size)
	}
	if err := checkJob(cfg.Job); err != nil {
		return nil, err
	}
	files, err := filesFromEnv()
	if err != nil {
		return nil, err
	}
	return &Provider{
		cfg:     cfg,
		dir:     shmDir(),
		files:   files,
		regions: map[uint64]*Region{},
		imports: map[*remoteRegion]struct{}{},
		qps:     map[*qp]struct{}{},
	}, nil
}

// Name returns "shm".
func (p *Provider) Name() string { return Name }

// Capabilities: strong signals, 1<<16 signals, puts up to 1 GiB, SignalAdd,
// load/store access to peers, inline execution.
func (p *Provider) Capabilities() rdma.Capabilities { return capabilities }

// Rank is the world rank the provider was opened for.
func (p *Provider) Rank() int { return p.cfg.Rank }

// RegisterMemory allocates size bytes of zeroed memory. Without
// rdma.LocalOnly it creates a shared-memory file of size bytes plus the
// doorbell line, rounded up to the page size (mmap.go), and maps it shared;
// its Descriptor lets peers Import it. In memfd mode (EnvFiles) the file is
// a memfd named rdmactor-<job>-r<rank>-<seq>, with no name in any
// directory, that peers can import until the region's Close; in named mode
// it is /dev/shm/rdmactor-<job>-r<rank>-<seq>, which lives until the
// region's Unlink or Close (or Cleanup of the job). With LocalOnly it is
// plain memory with an empty descriptor. Size 0 is allowed. The result is a
// *Region.
//
// It returns an error for a negative size, a file that cannot be created
// (memfd_create unavailable; in named mode, a file left over by an earlier
// job of the same name), and rdma.ErrClosed after Close.
func (p *Provider) RegisterMemory(size int, flags rdma.RegionFlags) (rdma.MemoryRegion, error) {
	n, err := mapLen(size)
	if err != nil {
		return nil, fmt.Errorf("shm: register: %w", err)
	}
	if flags&^rdma.LocalOnly != 0 {
		return nil, fmt.Errorf("shm: register: flags %#x: %w", uint32(flags), rdma.ErrNotSupported)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("shm: register: %w", rdma.ErrClosed)
	}
	p.seq++
	r := &Region{p: p, size: size, seq: p.seq, fd: -1}
	if flags&rdma.LocalOnly != 0 {
		r.local = true
		r.mem = make([]byte, size)
	} else {
		d := descriptor{rank: p.cfg.Rank, seq: r.seq, size: size, files: p.files}
		name := fileName(p.cfg.Job, p.cfg.Rank, r.seq)
		var fd int
		if p.files == modeMemfd {
			if fd, err = createMemfd(name, n); err != nil {
				return nil, fmt.Errorf("shm: register %d bytes: %w", size, err)
			}
			d.pid, d.fd = os.Getpid(), fd
			r.path = procFDPath(d.pid, fd)
			r.unlinked = true // no name to remove
		} else {
			r.path = filepath.Join(p.dir, name)
			if fd, err = createFile(r.path, n); err != nil {
				return nil, fmt.Errorf("shm: register %d bytes: %w", size, err)
			}
		}
		mem, err := mapShared(fd, n)
		if err != nil {
			err = errors.Join(fmt.Errorf("shm: register %s: %w", r.path, err), closeFD(fd))
			if !r.unlinked {
				err = errors.Join(err, removeFile(r.path))
			}
			return nil, err
		}
		r.fd, r.mem, r.bell, r.files = fd, mem, bellOf(mem), p.files
		r.desc = d.encode()
	}
	p.regions[r.seq] = r
	return r, nil
}

// ErrOwnerGone is wrapped by Import's error when a memfd region's owner
// has exited (or closed the region): its pages are reachable only through
// the owner's open descriptor, so nothing can import them any more.
var ErrOwnerGone = errors.New("the region's owner has exited or closed it")

// Import maps a peer's exported region from its Descriptor, in the mode the
// descriptor names whatever this rank's EnvFiles. The descriptor must come
// from rank peer of the same job. A memfd region is opened as
// /proc/<owner pid>/fd/<fd>, which must be that rank's region of this job
// (readlink shows its name) and needs the owner alive with the region open;
// a named file must still exist (peers import before the owner's Unlink).
// The provider's own regions (peer == Rank, loopback) are re-mapped from
// the file descriptor the owner keeps. The result's Close unmaps it.
//
// It returns an error for a malformed descriptor, a descriptor of another
// rank, a missing (os.ErrNotExist) or short file, an error wrapping
// ErrOwnerGone for a memfd region whose owner exited or closed it, and
// rdma.ErrClosed after Close.
func (p *Provider) Import(peer int, desc []byte) (rdma.RemoteRegion, error) {
	if peer < 0 || peer >= p.cfg.Size {
		return nil, fmt.Errorf("shm: import: peer %d of size %d: invalid", peer, p.cfg.Size)
	}
	d, err := decodeDescriptor(desc)
	if err != nil {
		return nil, fmt.Errorf("shm: import from rank %d: %w", peer, err)
	}
	if d.rank != peer {
		return nil, fmt.Errorf("shm: import from rank %d: %w: region of rank %d", peer, errBadDescriptor, d.rank)
	}
	n, err := mapLen(d.size)
	if err != nil {
		return nil, fmt.Errorf("shm: import from rank %d: %w", peer, err)
	}
	name := fileName(p.cfg.Job, peer, d.seq)
	path := filepath.Join(p.dir, name)
	if d.files == modeMemfd {
		path = procFDPath(d.pid, d.fd)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("shm: import: %w", rdma.ErrClosed)
	}
	var mem []byte
	if own := p.regions[d.seq]; peer == p.cfg.Rank && own != nil && !own.local {
		if own.size != d.size {
			return nil, fmt.Errorf("shm: import %s: %w: size %d, region has %d", path, errBadDescriptor, d.size, own.size)
		}
		if !bytes.Equal(desc, own.desc) {
			return nil, fmt.Errorf("shm: import %s: %w: not the region's descriptor", path, errBadDescriptor)
		}
		own.mu.Lock()
		if own.fd >= 0 {
			mem, err = mapShared(own.fd, n)
		} else {
			err = rdma.ErrClosed
		}
		own.mu.Unlock()
	} else {
		var fd int
		if d.files == modeMemfd {
			fd, err = openMemfd(peer, d.pid, d.fd, name, n)
		} else {
			fd, err = openFile(path, n)
		}
		if err == nil {
			mem, err = mapShared(fd, n)
			err = errors.Join(err, closeFD(fd)) // the mapping holds the file
		}
	}
	if err != nil {
		if mem != nil {
			err = errors.Join(err, unmap(mem))
		}
		return nil, fmt.Errorf("shm: import from rank %d: %w", peer, err)
	}
	r := &remoteRegion{p: p, peer: peer, size: d.size, mem: mem, path: path, bell: bellOf(mem)}
	p.imports[r] = struct{}{}
	return r, nil
}

// Connect opens a QP to peer (this rank for loopback). Its Post executes
// WQEs at once and reports each completion to cq before returning. It
// returns an error for an invalid peer or a nil cq, and rdma.ErrClosed after
// Close.
func (p *Provider) Connect(peer int, cq rdma.CompletionHandler) (rdma.QP, error) {
	if peer < 0 || peer >= p.cfg.Size {
		return nil, fmt.Errorf("shm: connect: peer %d of size %d: invalid", peer, p.cfg.Size)
	}
	if cq == nil {
		return nil, errors.New("shm: connect: nil completion handler")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("shm: connect: %w", rdma.ErrClosed)
	}
	q := &qp{p: p, peer: peer, cq: cq}
	p.qps[q] = struct{}{}
	return rdma.Checked(q, capabilities.MaxPutSize), nil
}

// Unlink removes the files of every exported named-mode region registered
// so far (see Region.Unlink; memfd regions have no name, so it does nothing
// for them); mappings stay valid. gin calls it once every peer has imported
// every window. It returns the joined errors of the regions, and
// rdma.ErrClosed after Close.
func (p *Provider) Unlink() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("shm: unlink: %w", rdma.ErrClosed)
	}
	regions := make([]*Region, 0, len(p.regions))
	for _, r := range p.regions {
		regions = append(regions, r)
	}
	p.mu.Unlock()
	var errs []error
	for _, r := range regions {
		if err := r.Unlink(); err != nil && !errors.Is(err, rdma.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every QP, import and region of the provider, in that order,
// removing the named files of its regions and closing their descriptors.
// Later calls return rdma.ErrClosed, Close included.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("shm: close: %w", rdma.ErrClosed)
	}
	p.closed = true
	qps, imports, regions := p.qps, p.imports, p.regions
	p.qps, p.imports, p.regions = nil, nil, nil
	p.mu.Unlock()

	var errs []error
	for q := range qps {
		q.closed.Store(true)
	}
	for r := range imports {
		if err := r.close(); err != nil && !errors.Is(err, rdma.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, r := range regions {
		if err := r.close(); err != nil && !errors.Is(err, rdma.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Provider) forgetRegion(r *Region) {
	p.mu.Lock()
	delete(p.regions, r.seq) // no-op on a nil map after Close
	p.mu.Unlock()
}

func (p *Provider) forgetImport(r *remoteRegion) {
	p.mu.Lock()
	delete(p.imports, r)
	p.mu.Unlock()
}

func (p *Provider) forgetQP(q *qp) {
	p.mu.Lock()
	delete(p.qps, q)
	p.mu.Unlock()
}
