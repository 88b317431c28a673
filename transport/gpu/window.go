package gpu

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Window is memory registered collectively for kernels (ncclWindow_t): on
// LSA, device memory of each rank, every rank's part mapped into every
// kernel; on the proxy path, a gin window (host memory) mapped into this
// rank's device, which the CPU proxies write with gin puts. Kernels get it
// by Handle.
type Window struct {
	g      *Comm
	id     int
	size   int
	local  cuda.DevicePtr // this rank's part as kernels address it
	handle cuda.DevicePtr // the WindowDesc
	gw     *gin.Window    // proxy path
	reg    *cuda.HostMem  // proxy path: gw registered with the device

	allocs  []cuda.DevicePtr // device memory of the window: LSA part and peer table, the WindowDesc
	opened  []cuda.DevicePtr // LSA: CUDA IPC mappings of peers' parts
	closing atomic.Bool      // Close was called
}

// RegisterWindow registers size bytes (zeroed) on every rank as one
// window. Collective, with equal sizes. A rank that fails makes every rank
// fail (the others with an error matching ErrPeerFailed) and undo their
// part, so a failed registration leaves nothing behind anywhere.
func (g *Comm) RegisterWindow(ctx context.Context, size int) (*Window, error) {
	if g.closed.Load() {
		return nil, ErrClosed
	}
	if size <= 0 {
		return nil, fmt.Errorf("register GPU window of %d bytes: %w", size, ErrBadArgument)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	w := &Window{g: g, id: len(*g.windows.Load()), size: size}
	var peers cuda.DevicePtr
	var err error
	if g.path == PathLSA {
		peers, err = w.registerLSA(ctx)
	} else {
		err = w.registerProxy(ctx)
	}
	if err == nil {
		w.handle, err = w.upload(encodeWindowDesc(uint64(size), uint64(w.local), uint64(peers), uint32(w.id)))
	}
	if err = agree(ctx, g.gc, err); err != nil {
		err = errors.Join(err, w.release())
		if w.gw != nil {
			err = errors.Join(err, w.gw.Close(ctx)) // every rank that got this far undoes it
		}
		return nil, fmt.Errorf("register GPU window of %d bytes: %w", size, err)
	}
	next := append(append([]*Window(nil), *g.windows.Load()...), w)
	g.windows.Store(&next)
	return w, nil
}

// registerLSA allocates this rank's part and maps every peer's. Whatever
// fails locally, it takes part in the exchange, so peers do not wait.
func (w *Window) registerLSA(ctx context.Context) (cuda.DevicePtr, error) {
	g := w.g
	p, err := g.ctx.MemAlloc(w.size)
	if err == nil {
		w.allocs = append(w.allocs, p)
		w.local = p
	}
	ptrs, opened, err := g.shareAlloc(ctx, p, w.size, err)
	w.opened = append(w.opened, opened...)
	if err != nil {
		return 0, err
	}
	return w.upload(encodeU64s(ptrs))
}

func (w *Window) registerProxy(ctx context.Context) error {
	g := w.g
	var err error
	if w.gw, err = g.gc.RegisterWindow(ctx, w.size, 0); err != nil {
		return err
	}
	if w.reg, err = g.ctx.HostRegister(w.gw.Bytes()); err != nil {
		return err
	}
	w.local = w.reg.Dev()
	return nil
}

// upload copies b into new device memory of the window.
func (w *Window) upload(b []byte) (cuda.DevicePtr, error) {
	p, err := w.g.ctx.MemAlloc(max(len(b), 8))
	if err != nil {
		return 0, err
	}
	w.allocs = append(w.allocs, p)
	return p, w.g.ctx.CopyToDevice(p, b)
}

// Close deregisters the window on every rank (ncclCommWindowDeregister).
// Collective: call it on every rank once no kernel of this rank uses the
// window any more. It waits until this rank's proxies posted every WQE its
// kernels published (they may name the window), meets the other ranks at a
// gin barrier (no kernel or proxy of any rank uses the window after it),
// drops the window's device registration, device memory and CUDA IPC
// mappings, and closes the gin window (gin.Window.Close, proxy path) or
// meets the ranks again (LSA): a rank that shares a CUDA context with
// another must not launch kernels that wait on it before the other freed
// its memory (freeing synchronizes the context). WQEs that name the window
// later fail the proxy with gin.ErrClosed; a second Close returns
// ErrClosed.
func (w *Window) Close(ctx context.Context) error {
	g := w.g
	if g.closed.Load() {
		return ErrClosed
	}
	if !w.closing.CompareAndSwap(false, true) {
		return fmt.Errorf("GPU window already closed: %w", ErrClosed)
	}
	for _, r := range g.rings {
		if err := r.drained(ctx); err != nil {
			return fmt.Errorf("close GPU window: %w", err)
		}
	}
	if err := g.gc.Barrier(ctx); err != nil {
		return fmt.Errorf("close GPU window: %w", err)
	}
	g.mu.Lock()
	err := w.release()
	g.mu.Unlock()
	if w.gw != nil {
		err = errors.Join(err, w.gw.Close(ctx))
	} else {
		err = errors.Join(err, g.gc.Barrier(ctx))
	}
	if err != nil {
		return fmt.Errorf("close GPU window: %w", err)
	}
	return nil
}

// release drops what the window holds of the device (host registration,
// IPC mappings, device memory), once; the gin window is closed
// collectively (Close) or by the gin.Comm's Close.
func (w *Window) release() error {
	g := w.g
	var errs []error
	if w.reg != nil {
		errs = append(errs, w.reg.Close())
		w.reg = nil
	}
	for _, p := range w.opened {
		errs = append(errs, g.ctx.IPCClose(p))
	}
	for _, p := range w.allocs {
		errs = append(errs, g.ctx.MemFree(p))
	}
	w.opened, w.allocs = nil, nil
	return errors.Join(errs...)
}

// Handle is what kernels take as a Window argument.
func (w *Window) Handle() cuda.DevicePtr { return w.handle }

// Size is the window's length in bytes on every rank.
func (w *Window) Size() int { return w.size }

// Ptr is this rank's part as kernels address it.
func (w *Window) Ptr() cuda.DevicePtr { return w.local }

// Gin is the gin window behind a proxy-path window, so Go code can put into
// it (with Comm.SignalInc or gin.SignalInc for device signals); nil on the
// LSA path.
func (w *Window) Gin() *gin.Window { return w.gw }

// Write copies b into this rank's part at off (not concurrently with
// kernels that touch those bytes).
func (w *Window) Write(off int, b []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !rdma.InBounds(off, len(b), w.size) {
		return fmt.Errorf("window write of %d bytes at %d of %d: %w", len(b), off, w.size, gin.ErrOutOfBounds)
	}
	if w.gw != nil {
		copy(w.gw.Bytes()[off:], b)
		return nil
	}
	return w.g.ctx.CopyToDevice(w.local+cuda.DevicePtr(off), b)
}

// Read copies len(b) bytes of this rank's part at off into b.
func (w *Window) Read(off int, b []byte) error {
	if err := w.usable(); err != nil {
		return err
	}
	if !rdma.InBounds(off, len(b), w.size) {
		return fmt.Errorf("window read of %d bytes at %d of %d: %w", len(b), off, w.size, gin.ErrOutOfBounds)
	}
	if w.gw != nil {
		copy(b, w.gw.Bytes()[off:])
		return nil
	}
	return w.g.ctx.CopyFromDevice(b, w.local+cuda.DevicePtr(off))
}

func (w *Window) usable() error {
	if w.g.closed.Load() || w.closing.Load() {
		return ErrClosed
	}
	return nil
}

// window returns window id, or nil (lock-free, for the proxies).
func (g *Comm) window(id uint32) *Window {
	ws := *g.windows.Load()
	if int(id) >= len(ws) {
		return nil
	}
	return ws[id]
}
