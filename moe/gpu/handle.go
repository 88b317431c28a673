package gpumoe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/moe"
	"github.com/rdmactor/rdmactor/moe/internal/order"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// Handle is one rank's GPU dispatch/combine over a gpu.Comm (LSA path),
// with its window registered once (sized by Config) and reused by every
// round (DeepEP's deep_ep.Buffer). Build one per rank with New.
//
// Calls queue kernels on the gpu.Comm's stream and return: nothing waits
// for the GPU between phases (layout, counts, rows, expert, combine run
// back to back). Sync waits and reports what the kernels recorded.
//
// Calls are collective in the order of their kernels: every rank queues
// Dispatch then Combine (or DispatchLL then CombineLL) for each round, in
// the same order. A Handle is safe for concurrent use, but its calls are
// serialized and not meant to overlap.
type Handle struct {
	g      *gpu.Comm
	cfg    Config
	p      plan
	win    *gpu.Window
	state  cuda.DevicePtr
	k      *kernels
	args   Args
	blocks int

	mu      sync.Mutex
	st      phase
	err     error // what broke the handle
	round   uint64
	llRound uint64
	tokens  int // of the last Dispatch
	llTok   int // of the last DispatchLL
	recv    *Recv
	recvLL  *RecvLL
	trace   *cuda.Event
}

// phase is where the Handle is in the order of calls.
type phase = order.State

const (
	idle         = order.Idle
	dispatched   = order.Dispatched
	dispatchedLL = order.DispatchedLL
)

// New builds this rank's Handle over g and registers its window.
// Collective: every rank calls it with an equal cfg. g must be on the LSA
// path (ErrNotSupported otherwise: the kernels order many warps' puts
// before one signal with device-memory fences, which the proxy rings do
// not carry), and have the device signals Signal0 .. Signal0+Signals-1,
// which New resets.
func New(ctx context.Context, g *gpu.Comm, cfg Config) (_ *Handle, err error) {
	if g.Path() != gpu.PathLSA {
		return nil, fmt.Errorf("gpumoe: %v path: want lsa (NVLink or PCIe peers): %w", g.Path(), gin.ErrNotSupported)
	}
	n := g.Size()
	if err := cfg.check(n); err != nil {
		return nil, err
	}
	dc := g.DevComm()
	// DevComm.nSignals at byte 16 (transport/gpu/include/rdmactor/impl/gin__types.cuh).
	have := int(binary.LittleEndian.Uint32(dc[16:]))
	if need := cfg.Signal0 + Signals(n, cfg); need > have {
		return nil, fmt.Errorf("gpumoe: signals %d..%d, the gpu comm has %d (raise gin.Config.Signals): %w",
			cfg.Signal0, need-1, have, moe.ErrBadArgument)
	}
	p, err := newPlan(cfg, n, g.Rank())
	if err != nil {
		return nil, err
	}
	sms, err := g.Device().Attribute(cuda.AttrMultiprocessorCount)
	if err != nil {
		return nil, fmt.Errorf("gpumoe: %w", err)
	}
	if sms < n {
		return nil, fmt.Errorf("gpumoe: %d SMs for %d ranks: the dispatch needs a block per rank: %w", sms, n, gin.ErrNotSupported)
	}
	blocks := sms
	if cfg.Blocks > 0 {
		blocks = max(n, min(cfg.Blocks, sms))
	}
	h := &Handle{g: g, cfg: cfg, p: p, blocks: blocks}
	// Local setup first (a failure is voted on below, so no rank is left
	// alone in a collective), then the collective window.
	h.k, err = loadKernels(g)
	if err == nil {
		h.state, err = g.Context().MemAlloc(p.stateSize)
	}
	if err == nil { // the kernels' completion counters start at 0
		err = g.Context().Memset(h.state, 0, p.stateSize)
	}
	var werr error
	h.win, werr = g.RegisterWindow(ctx, p.size)
	err = errors.Join(err, werr)
	if err == nil {
		h.args = p.args(h.win.Handle(), h.state)
		for s := range p.signals() {
			if err = g.ResetSignal(gin.Signal(p.sig0 + s)); err != nil {
				break
			}
		}
	}
	if err == nil && p.maxLL > 0 {
		// Route and weight words carry a round from 1 on: memory an
		// earlier handle left there must not pass for one (kernels.cu: llWord).
		err = g.Context().Memset(h.win.Ptr()+cuda.DevicePtr(p.llRoute), 0, n*p.routeB)
		if err == nil { // weight words too
			err = g.Context().Memset(h.win.Ptr()+cuda.DevicePtr(p.llW), 0, n*p.maxLL*p.k*8)
		}
		if err == nil { // and the combine's flags
			err = g.Context().Memset(h.win.Ptr()+cuda.DevicePtr(p.llFlag), 0, n*p.maxLL*p.flagS*8)
		}
		if err == nil {
			err = g.Context().Synchronize()
		}
	}
	// Every rank reset its signals and route words before any rank's kernel
	// signals or writes them, and every rank takes the smallest grid (the
	// low-latency dispatch counts each source's blocks).
	least, verr := vote(ctx, g.Gin(), err, blocks)
	if verr != nil {
		return nil, errors.Join(fmt.Errorf("gpumoe: new: %w", verr), h.release(ctx))
	}
	h.blocks = least
	return h, nil
}

// vote tells every rank whether each succeeded (nil only if all did) and
// the smallest of their grids.
func vote(ctx context.Context, gc *gin.Comm, mine error, blocks int) (int, error) {
	msg := binary.LittleEndian.AppendUint32([]byte{1}, uint32(blocks))
	if mine != nil {
		msg[0] = 0
	}
	all, err := gc.AllGather(ctx, msg)
	if err != nil {
		return 0, errors.Join(mine, err)
	}
	least := blocks
	for r, b := range all {
		if len(b) != 5 || b[0] != 1 {
			if mine != nil {
				return 0, mine
			}
			return 0, fmt.Errorf("rank %d failed: %w", r, gpu.ErrPeerFailed)
		}
		least = min(least, int(binary.LittleEndian.Uint32(b[1:])))
	}
	return least, nil
}

// release frees what New got; the window only if registered (collective:
// every rank that got this far closes it).
func (h *Handle) release(ctx context.Context) error {
	var errs []error
	if h.win != nil {
		errs = append(errs, h.win.Close(ctx))
		h.win = nil
	}
	if h.state != 0 {
		errs = append(errs, h.g.Context().MemFree(h.state))
		h.state = 0
	}
	if h.k != nil {
		errs = append(errs, h.k.close())
		h.k = nil
	}
	return errors.Join(errs...)
}

// Close waits for the Handle's kernels, meets every rank (no peer still
// puts into this rank's window) and deregisters the window. Collective.
func (h *Handle) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	werr := h.g.Wait(ctx)
	berr := h.g.Gin().Barrier(ctx)
	h.err = ErrBroken
	return errors.Join(werr, berr, h.release(ctx))
}

// Config is the Handle's configuration.
func (h *Handle) Config() Config { return h.cfg }

// Comm is the gpu.Comm the Handle runs on; its Stream orders the kernels.
func (h *Handle) Comm() *gpu.Comm { return h.g }

// Rank and Size are this rank and the number of ranks.
func (h *Handle) Rank() int { return h.p.me }

// Size is the number of ranks.
func (h *Handle) Size() int { return h.p.n }

// LocalExperts is NumExperts / Size.
func (h *Handle) LocalExperts() int { return h.p.l }

// Blocks is the grid of the data kernels (1024-thread blocks; the
// normal-mode dispatch runs twice as many of 512 threads).
func (h *Handle) Blocks() int { return h.blocks }

// RowStride is the byte distance between rows of Input, Recv.X and
// RecvLL.Y: Hidden*2 rounded up to 16.
func (h *Handle) RowStride() int { return h.p.rs }

// Input is the Handle's input buffer in this rank's part of the window,
// [max(MaxTokens, MaxLLTokens)] rows of Hidden bf16 every RowStride bytes.
// Write the tokens here (or pass x to Dispatch, which reads them there).
// Its contents may change at each Dispatch or DispatchLL.
func (h *Handle) Input() cuda.DevicePtr { return h.win.Ptr() + cuda.DevicePtr(h.p.input) }

// begin takes the Handle for a call that needs phase want; the caller
// unlocks h.mu.
func (h *Handle) begin(name string, want phase) error {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return fmt.Errorf("gpumoe: %s: %w: %v", name, ErrBroken, h.err)
	}
	if h.st != want {
		h.mu.Unlock()
		return fmt.Errorf("gpumoe: %s in state %v: %w", name, h.st, ErrOrder)
	}
	return nil
}

// launch queues kernel name; a failure to queue breaks the Handle (the
// ranks' kernels no longer pair up).
func (h *Handle) launch(name string, grid, shared int, args ...any) error {
	if err := h.g.Launch(h.k.fn[name], cuda.Dim3{X: grid}, cuda.Dim3{X: threads}, shared, args...); err != nil {
		h.err = err
		return fmt.Errorf("gpumoe: %w", err)
	}
	return nil
}

// launchOverlapped is launch with programmatic dependent launch
// (gpu.Comm.LaunchOverlapped): the kernel's launch and the start of its
// blocks overlap the kernel ahead of it on the stream, and it waits for
// that kernel (waitPrior, kernels.cu) before it touches memory. The
// low-latency kernels take it: queued right behind another kernel, their
// first block starts sooner after it than with launch (docs/moe_gpu.md,
// "Where the time goes"); so do the normal-mode dispatch and combine.
func (h *Handle) launchOverlapped(name string, grid, shared int, args ...any) error {
	return h.launchOverlappedBlocks(name, grid, threads, shared, args...)
}

// launchOverlappedBlocks is launchOverlapped with blocks of t threads.
func (h *Handle) launchOverlappedBlocks(name string, grid, t, shared int, args ...any) error {
	if err := h.g.LaunchOverlapped(h.k.fn[name], cuda.Dim3{X: grid}, cuda.Dim3{X: t}, shared, args...); err != nil {
		h.err = err
		return fmt.Errorf("gpumoe: %w", err)
	}
	return nil
}

// source returns where a dispatch reads its rows: x, or Input when x is 0,
// and the bytes between rows (RowStride in Input, Hidden*2 in x).
func (h *Handle) source(x cuda.DevicePtr) (cuda.DevicePtr, uint64) {
	if x == 0 || x == h.Input() {
		return h.Input(), uint64(h.p.rs)
	}
	return x, uint64(2 * h.p.h)
}

// Sync waits until every kernel queued on the gpu.Comm's stream returned
// (gpu.Comm.Wait: ctx ending aborts them), then reports the first error a
// kernel of the Handle recorded since the last Sync (a *KernelError) and
// the gpu.Comm's device-side error. An abort breaks the Handle.
func (h *Handle) Sync(ctx context.Context) error {
	werr := h.g.Wait(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	var kerr error
	if h.state != 0 {
		var b [8]byte
		ptr := h.state + cuda.DevicePtr(h.p.errWord)
		if err := h.g.Context().CopyFromDevice(b[:], ptr); err != nil {
			kerr = err
		} else if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			kerr = &KernelError{Code: uint32(v >> 32), Detail: uint32(v)}
			if err := h.g.Context().Memset(ptr, 0, 8); err != nil {
				kerr = errors.Join(kerr, err)
			}
		}
	}
	err := errors.Join(werr, kerr, h.g.DeviceError())
	if err != nil && (errors.Is(err, gpu.ErrAborted) || werr != nil) && h.err == nil {
		h.err = err
	}
	return err
}

// StartLine queues a kernel that waits until the 8-byte word at gate
// (pinned host memory, cuda.Context.HostAlloc) is nonzero, if gate is not
// 0, then meets every rank at a device barrier (BarrierSession 0): the
// start of a timed round, so that kernels queued behind it start together
// on every rank. Collective.
func (h *Handle) StartLine(gate cuda.DevicePtr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.launch(kSync, 1, 0, h.g.DevComm(), gate)
}

// Trace makes every later Dispatch run its layout as a kernel of its own
// (moe_layout) and record ev on the stream between it and the dispatch
// kernel (nil: no longer, the layout fused into the dispatch kernel
// again), so that benchmarks can time the layout apart; the split costs
// the round a kernel boundary and the event. ev belongs to the gpu.Comm's
// context.
func (h *Handle) Trace(ev *cuda.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trace = ev
}

// readState copies n bytes of the device state at off.
func (h *Handle) readState(off, n int) ([]byte, error) {
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	return b, h.g.Context().CopyFromDevice(b, h.state+cuda.DevicePtr(off))
}

func i32s(b []byte) []int32 {
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
