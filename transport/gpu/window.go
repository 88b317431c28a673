package gpu

import (
	"context"
	"errors"
	"fmt"

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
}

// RegisterWindow registers size bytes (zeroed) on every rank as one
// window. Collective, with equal sizes.
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
		w.handle, err = g.devUpload(encodeWindowDesc(uint64(size), uint64(w.local), uint64(peers), uint32(w.id)))
	}
	if err != nil {
		return nil, fmt.Errorf("register GPU window of %d bytes: %w", size, errors.Join(err, w.release()))
	}
	next := append(append([]*Window(nil), *g.windows.Load()...), w)
	g.windows.Store(&next)
	return w, nil
}

func (w *Window) registerLSA(ctx context.Context) (cuda.DevicePtr, error) {
	g := w.g
	p, err := g.devAlloc(w.size)
	if err != nil {
		return 0, err
	}
	w.local = p
	ptrs, err := g.shareAlloc(ctx, p, w.size)
	if err != nil {
		return 0, err
	}
	return g.devUpload(encodeU64s(ptrs))
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

// release drops the window's host registration; device allocations are
// the Comm's and go with it.
func (w *Window) release() error {
	if w.reg == nil {
		return nil
	}
	r := w.reg
	w.reg = nil
	return r.Close()
}

// Handle is what kernels take as a Window argument.
func (w *Window) Handle() cuda.DevicePtr { return w.handle }

// Size is the window's length in bytes on every rank.
func (w *Window) Size() int { return w.size }

// Ptr is this rank's part as kernels address it.
func (w *Window) Ptr() cuda.DevicePtr { return w.local }

// Gin is the gin window behind a proxy-path window, so Go code can put into
// it (with Comm.SignalAction for device signals); nil on the LSA path.
func (w *Window) Gin() *gin.Window { return w.gw }

// Write copies b into this rank's part at off (not concurrently with
// kernels that touch those bytes).
func (w *Window) Write(off int, b []byte) error {
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
	if !rdma.InBounds(off, len(b), w.size) {
		return fmt.Errorf("window read of %d bytes at %d of %d: %w", len(b), off, w.size, gin.ErrOutOfBounds)
	}
	if w.gw != nil {
		copy(b, w.gw.Bytes()[off:])
		return nil
	}
	return w.g.ctx.CopyFromDevice(b, w.local+cuda.DevicePtr(off))
}

// window returns window id, or nil (lock-free, for the proxies).
func (g *Comm) window(id uint32) *Window {
	ws := *g.windows.Load()
	if int(id) >= len(ws) {
		return nil
	}
	return ws[id]
}
