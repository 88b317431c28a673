package shm

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/internal/futex"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/internal/pins"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Unlinker is implemented by shm regions and by *Provider. gin type-asserts
// a rdma.MemoryRegion to it and calls Unlink once every peer has imported
// the region (after a barrier), so that no named file outlives the job even
// if a rank is killed later. memfd regions have no name: Unlink is a no-op.
type Unlinker interface {
	// Unlink removes the region's file name, if it has one; mappings stay
	// valid.
	Unlink() error
}

// Region is a local memory region of an shm Provider, the concrete type of
// what RegisterMemory returns. An exported region (without rdma.LocalOnly)
// is a MAP_SHARED mapping of a memfd or, in named mode, of a file in
// /dev/shm (EnvFiles); a LocalOnly region is ordinary Go memory.
//
// Bytes, Descriptor, Path and Size are safe for concurrent use; Close and
// Unlink may be called concurrently with them and with Posts naming the
// region (Posts then fail with rdma.ErrClosed).
type Region struct {
	p     *Provider
	pins  pins.Pins // a running WQE's hold on the mapping; Close waits for it before unmapping
	size  int
	mem   []byte // the whole mapping (mapLen bytes); mem[:size] is the window; immutable
	desc  []byte // nil for LocalOnly
	seq   uint64
	path  string   // what peers open: /proc/<pid>/fd/<fd> or the named file; "" for LocalOnly
	files fileMode // 0 for LocalOnly
	local bool
	bell  futex.Bell // the mapping's doorbell line (mmap.go); zero for LocalOnly

	mu       sync.Mutex
	fd       int  // kept open: peers open a memfd through it; the owner re-maps after Unlink (loopback import)
	unlinked bool // no name left to remove (always true for memfd)
}

var (
	_ rdma.MemoryRegion = (*Region)(nil)
	_ rdma.Belled       = (*Region)(nil)
)

// bellOf is the doorbell in the last line of a mapping (mmap.go).
func bellOf(mem []byte) futex.Bell {
	n := len(mem)
	return futex.At(memword.Uint32(mem, n-bellBytes), memword.Uint32(mem, n-bellBytes/2))
}

// Doorbell is rung by every WQE that applies a signal to a word of the
// region, from any rank; its owner blocks on it (gin's signal waits). A
// LocalOnly region has none: its Doorbell is nil. Use it only while the
// region is open: Close unmaps the words.
func (r *Region) Doorbell() rdma.Doorbell {
	if !r.bell.Valid() {
		return nil
	}
	return r.bell
}

// Bytes returns the region's memory: exactly Size bytes, zeroed at
// registration. It returns nil after Close; the slice must not be used
// after Close either (its pages are unmapped).
func (r *Region) Bytes() []byte { return r.pins.Window(r.mem, r.size) }

// Size is the region's length in bytes.
func (r *Region) Size() int { return r.size }

// Descriptor returns a copy of what a peer passes to Import (40 bytes), or
// nil for a LocalOnly region.
func (r *Region) Descriptor() []byte { return bytes.Clone(r.desc) }

// Path is where peers open an exported region: /proc/<pid>/fd/<fd> for a
// memfd (valid while the region is open), the file in the shm directory in
// named mode (the name may already be gone: Unlink, Cleanup), and "" for
// LocalOnly.
func (r *Region) Path() string { return r.path }

// Unlink removes a named-mode region's file. Mappings made before, here and
// in the peers, stay valid, and this rank can still import its own region
// (loopback); peers can no longer Import it. Call it once every peer has
// imported. Unlinking twice, a memfd region (it has no name; peers can
// import it until Close) or a LocalOnly region is a no-op; after Close it
// returns rdma.ErrClosed.
func (r *Region) Unlink() error {
	if r.local {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pins.Closed() {
		return fmt.Errorf("shm: unlink %s: %w", r.path, rdma.ErrClosed)
	}
	if r.unlinked {
		return nil
	}
	if err := removeFile(r.path); err != nil {
		return fmt.Errorf("shm: %w", err)
	}
	r.unlinked = true
	return nil
}

// Close unmaps the region, closes its descriptor (peers can no longer import
// a memfd region) and removes a named file if Unlink has not. Posts naming
// it afterwards fail with rdma.ErrClosed; peers' imports stay mapped (the
// pages live until the last mapping goes). A second Close returns
// rdma.ErrClosed.
func (r *Region) Close() error {
	if err := r.close(); err != nil {
		return err
	}
	r.p.forgetRegion(r)
	return nil
}

// close does Close's work without touching the provider's tables.
func (r *Region) close() error {
	if !r.pins.Close() {
		return fmt.Errorf("shm: close region: %w", rdma.ErrClosed)
	}
	if r.local {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if !r.unlinked {
		errs = append(errs, removeFile(r.path))
		r.unlinked = true
	}
	errs = append(errs, closeFD(r.fd), unmap(r.mem))
	r.fd = -1
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shm: close region %s: %w", r.path, err)
	}
	return nil
}

// remoteRegion is a peer's exported region mapped into this process (the
// concrete type behind rdma.RemoteRegion for shm).
type remoteRegion struct {
	p    *Provider
	pins pins.Pins // as Region's
	peer int
	size int
	mem  []byte // the whole mapping; mem[:size] is the peer's window
	path string
	bell futex.Bell // the owner's doorbell, rung after a signal add
}

var _ rdma.RemoteRegion = (*remoteRegion)(nil)

// Peer is the owner's world rank.
func (r *remoteRegion) Peer() int { return r.peer }

// Size is the region's length in bytes.
func (r *remoteRegion) Size() int { return r.size }

// Close unmaps the import; Posts naming it afterwards fail with
// rdma.ErrClosed. A second Close returns rdma.ErrClosed.
func (r *remoteRegion) Close() error {
	if err := r.close(); err != nil {
		return err
	}
	r.p.forgetImport(r)
	return nil
}

func (r *remoteRegion) close() error {
	if !r.pins.Close() {
		return fmt.Errorf("shm: close import of %s: %w", r.path, rdma.ErrClosed)
	}
	// r.mem keeps its (now unmapped) value: fields stay immutable so that
	// readers racing with Close see no data race; pins keep Posts off it.
	if err := unmap(r.mem); err != nil {
		return fmt.Errorf("shm: close import of %s: %w", r.path, err)
	}
	return nil
}

// window is [off, off+n) of the region: sliced from the window, not the
// mapping (which holds the doorbell line past it), so that a range gin did
// not validate panics instead of writing past the window.
func (r *Region) window(off, n int) []byte { return r.mem[:r.size][off : off+n] }

// window is [off, off+n) of the peer's window, as Region.window.
func (r *remoteRegion) window(off, n int) []byte { return r.mem[:r.size][off : off+n] }
