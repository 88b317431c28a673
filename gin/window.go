package gin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// WindowFlags select how a window is registered.
type WindowFlags uint32

const (
	// StrictOrdering allows VA signals on the window's words
	// (NCCL_WIN_COLL_STRICT_ORDERING, NCCL 2.28).
	StrictOrdering WindowFlags = 1 << iota
)

// Window is memory registered collectively: every rank holds Size bytes,
// addressed by (window, byte offset) from any rank (ncclWindow_t).
type Window struct {
	c       *Comm
	flags   WindowFlags
	size    int
	mr      rdma.MemoryRegion
	remotes []rdma.RemoteRegion // by peer slot (Comm.slotOf), including this rank
	closing atomic.Bool
}

// Size is the window's length in bytes on every rank.
func (w *Window) Size() int { return w.size }

// Bytes is this rank's part of the window. Peers' puts land in it; read it
// after a signal or barrier says the data is there.
func (w *Window) Bytes() []byte { return w.mr.Bytes() }

// Comm is the communicator the window was registered on.
func (w *Window) Comm() *Comm { return w.c }

// Flags are the flags the window was registered with.
func (w *Window) Flags() WindowFlags { return w.flags }

// RegisterWindow registers size bytes (zeroed) on every rank as one window.
// Collective: every rank calls it with the same size and flags; unequal
// sizes fail on every rank with ErrBadArgument.
func (c *Comm) RegisterWindow(ctx context.Context, size int, flags WindowFlags) (*Window, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if size < 0 {
		return nil, fmt.Errorf("register window of %d bytes: %w", size, ErrBadArgument)
	}
	w, err := c.register(ctx, size, flags)
	if err != nil {
		return nil, fmt.Errorf("register window of %d bytes: %w", size, err)
	}
	c.mu.Lock()
	c.windows = append(c.windows, w)
	c.mu.Unlock()
	return w, nil
}

// register allocates a region, swaps descriptors with every rank, imports
// those of its peers (Config.Peers: every rank by default), and after a
// barrier (every rank has imported what it needs) lets the provider drop
// its names (shm unlinks its files, so nothing is left behind even if a
// rank is killed later). Every rank's size and flags are checked, peer or
// not, so that all ranks agree on failure.
func (c *Comm) register(ctx context.Context, size int, flags WindowFlags) (*Window, error) {
	mr, err := c.prov.RegisterMemory(size, 0)
	if err != nil {
		return nil, err
	}
	w := &Window{c: c, flags: flags, size: size, mr: mr, remotes: make([]rdma.RemoteRegion, c.slots)}
	desc := binary.LittleEndian.AppendUint64(nil, uint64(size))
	desc = binary.LittleEndian.AppendUint32(desc, uint32(flags))
	all, err := c.boot.AllGather(ctx, append(desc, mr.Descriptor()...))
	if err != nil {
		c.noteLost(err)
		return nil, errors.Join(err, w.close())
	}
	for r, d := range all {
		if len(d) < 12 || binary.LittleEndian.Uint64(d) != uint64(size) || WindowFlags(binary.LittleEndian.Uint32(d[8:])) != flags {
			err = fmt.Errorf("rank %d registers a different size or flags (this rank: %d bytes, flags %#x): %w", r, size, flags, ErrBadArgument)
			break
		}
		slot, nerr := c.slotOf(r)
		if nerr != nil {
			continue // no import, no address-vector entry, no mapping
		}
		if w.remotes[slot], err = c.prov.Import(r, d[12:]); err != nil {
			err = fmt.Errorf("import rank %d's region: %w", r, err)
			break
		}
	}
	// Every rank reaches the barrier, failed or not, so none waits forever
	// for one that gave up; then each learns whether any failed.
	ok := []byte{1}
	if err != nil {
		ok[0] = 0
	}
	votes, gerr := c.boot.AllGather(ctx, ok)
	if err == nil && gerr != nil {
		err = c.noteLost(gerr)
	}
	for r, v := range votes {
		if err == nil && (len(v) != 1 || v[0] != 1) {
			err = fmt.Errorf("rank %d failed to register its part: %w", r, ErrBadArgument)
		}
	}
	if err != nil {
		return nil, errors.Join(err, w.close())
	}
	if u, ok := mr.(interface{ Unlink() error }); ok {
		if err := u.Unlink(); err != nil {
			return nil, errors.Join(fmt.Errorf("unlink region: %w", err), w.close())
		}
	}
	return w, nil
}

// Close deregisters the window on every rank (ncclCommWindowDeregister).
// Collective: after a barrier (no rank still puts into it), each rank drops
// its imports and frees its part. Puts naming the window afterwards fail
// with ErrClosed.
func (w *Window) Close(ctx context.Context) error {
	c := w.c
	if c.closed.Load() {
		return ErrClosed
	}
	if !w.closing.CompareAndSwap(false, true) {
		return fmt.Errorf("window already closed: %w", ErrClosed)
	}
	if err := c.Barrier(ctx); err != nil {
		return fmt.Errorf("close window: %w", err)
	}
	return w.close()
}

func (w *Window) close() error {
	var errs []error
	for _, r := range w.remotes {
		if r != nil {
			errs = append(errs, r.Close())
		}
	}
	return errors.Join(append(errs, w.mr.Close())...)
}

// bounds checks that w is a window and [off, off+n) lies in it, without
// overflow.
func (w *Window) bounds(what string, off, n int) error {
	if w == nil {
		return fmt.Errorf("%s: nil window: %w", what, ErrBadArgument)
	}
	if w.closing.Load() {
		return fmt.Errorf("%s: window closed: %w", what, ErrClosed)
	}
	if !rdma.InBounds(off, n, w.size) {
		return fmt.Errorf("%s: offset %d + %d bytes outside window of %d bytes: %w", what, off, n, w.size, ErrOutOfBounds)
	}
	return nil
}
