package moe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/unsafeview"
	"github.com/rdmactor/rdmactor/moe/internal/order"
)

// Config sizes a Handle. Every rank passes an equal Config to New.
type Config struct {
	// Sizes are the buffer dimensions; Hidden counts elements of T. The
	// normal-mode windows hold about 2*size*MaxTokens rows per rank, the
	// low-latency ones NumExperts*MaxLLTokens rows plus MaxLLTokens*TopK.
	Sizes
	// Context is the first gin context the Handle posts on; Contexts is
	// how many, from Context on (default 1). Destinations are spread over
	// them (rank r on context Context + r%Contexts), and with more than
	// one the puts of each context are issued by their own goroutine, so
	// on shm their copies run in parallel where cores are free; the sums
	// of both combines are then split over as many goroutines too.
	Context, Contexts int
	// PerRow disables coalescing: every token row is its own put even when
	// consecutive tokens go to the same rank (as a GPU kernel would post
	// them). For measurements; the default puts runs of rows at once.
	PerRow bool
	// Pacing is how waits pass the time (barrier.Pacing): the zero value
	// is gin's WaitSignalVA with gin.Config.Idle; OSYield for ranks that
	// are processes sharing cores, Gosched for goroutine ranks sharing
	// GOMAXPROCS.
	Pacing barrier.Pacing
	// Timeout bounds a call whose context has no deadline; default 60 s.
	Timeout time.Duration
}

// Handle is one rank's expert-parallel dispatch/combine over a gin.Comm,
// with windows registered once (sized by Config) and reused by every call
// (DeepEP's deep_ep.Buffer). Build one per rank with New.
//
// Calls are collective: every rank calls Dispatch then Combine (or
// DispatchLL then CombineLL) for each round, in the same order. Calls on
// one Handle are serialized by a mutex; they are not meant to overlap.
type Handle[T Elem] struct {
	g    *gin.Comm
	cfg  Config
	n    int // ranks
	me   int
	nl   int // local experts
	es   int // element size
	rowB int // bytes per row
	team gin.Team
	xs   []*gin.Context // by context offset
	wx   *gin.Context   // the context waits read signals through
	lay  regions
	maxP int // bytes per put at most

	sig, in, recv, comb, ll *gin.Window

	mu     sync.Mutex
	state  state
	err    error  // what broke the handle
	rounds uint64 // normal rounds begun (count signals reach this)
	dataX  []uint64
	combX  []uint64
	llRnd  uint64 // low-latency rounds begun

	// Per-round state of the normal mode.
	layout    Layout
	pos       []int32 // [numTokens][n]
	numTokens int
	counts    CountMatrix
	runs      []Run
	recvOut   Recv[T]
	acc       []float32   // one row of float32
	accs      [][]float32 // one per part of a split sum
	blocks    [][]T       // rows returned by each rank, for reduce

	// Per-round state of the low-latency mode.
	llSlot   []int32 // [numTokens][TopK]
	llCount  []int   // [NumExperts]
	llTopk   []int32 // [numTokens][TopK] as dispatched
	llTokens int
	llOut    RecvLL[T]
}

// state is where the Handle is in the order of calls.
type state = order.State

const (
	idle         = order.Idle
	dispatched   = order.Dispatched
	dispatchedLL = order.DispatchedLL
)

// regions are the byte offsets of the Handle's buffers in its windows.
//
//	sig  (StrictOrdering; one 64-byte line per word):
//	     cnt[n] | data[n] | comb[n] | llDisp[L] | llComb[n]
//	in   input rows [maxIn][H] | stage [n][block] | llStage [E][llBlock]
//	recv recvX [n*MaxTokens][H] | meta [2 parities][n sources][block]
//	comb combine rows [n*MaxTokens][H]
//	ll   llX [L][n][MaxLL][H] | llMeta [L][n][llBlock] | llComb [MaxLL][K][H]
//
// A normal block is a header of n int64 counts (the sender's
// NumTokensPerRank), padded to 64 bytes, then one entry of 1+2K uint32 per
// row: source token index, K local expert indices (-1: not on the
// receiver), K weights (float32 bits). A low-latency block is a uint64
// count, then count uint32 entries t*K+k (token t's slot k at the
// sender).
type regions struct {
	sigCnt, sigData, sigComb, sigLL, sigLLComb int
	sigSize                                    int

	input, stage, llStage, inSize int
	block, llBlock                int

	recvX, meta, recvSize int
	combSize              int

	llX, llMeta, llComb, llSize int
}

const line = 64

func align(n int) int { return (n + line - 1) &^ (line - 1) }

// maxWindow bounds any window the Handle registers (sizes are computed
// in int, which must not overflow).
const maxWindow = 1 << 40

func (c *Config) check(n int) error {
	if err := c.Sizes.Check(n); err != nil {
		return fmt.Errorf("moe: %w", err)
	}
	switch {
	case c.Context < 0 || c.Contexts < 0:
		return fmt.Errorf("moe: context %d, contexts %d: %w", c.Context, c.Contexts, ErrBadArgument)
	case c.Hidden > maxWindow || c.TopK > 1<<16 || c.NumExperts > 1<<20 || c.MaxTokens > 1<<24 || c.MaxLLTokens > 1<<24:
		return fmt.Errorf("moe: sizes too large: %w", ErrBadArgument)
	}
	return nil
}

// plan computes the regions of cfg for n ranks and es-byte elements.
func plan(cfg Config, n, es int) (regions, error) {
	var l regions
	H, K, E := cfg.Hidden, cfg.TopK, cfg.NumExperts
	L := E / n
	rowB := H * es
	// sig
	l.sigCnt = 0
	l.sigData = l.sigCnt + n*line
	l.sigComb = l.sigData + n*line
	l.sigLL = l.sigComb + n*line
	l.sigLLComb = l.sigLL + L*line
	l.sigSize = l.sigLLComb + n*line
	// blocks
	l.block = align(8*n) + align(4*(1+2*K)*cfg.MaxTokens)
	l.llBlock = align(8 + 4*cfg.MaxLLTokens)
	// in
	maxIn := max(cfg.MaxTokens, cfg.MaxLLTokens)
	l.input = 0
	l.stage = align(maxIn * rowB)
	l.llStage = l.stage
	if cfg.MaxTokens > 0 {
		l.llStage += n * l.block
	}
	l.inSize = l.llStage
	if cfg.MaxLLTokens > 0 {
		l.inSize += E * l.llBlock
	}
	// recv, comb
	if cfg.MaxTokens > 0 {
		l.recvX = 0
		l.meta = align(n * cfg.MaxTokens * rowB)
		l.recvSize = l.meta + 2*n*l.block
		l.combSize = align(n * cfg.MaxTokens * rowB)
	}
	// ll
	if cfg.MaxLLTokens > 0 {
		l.llX = 0
		l.llMeta = align(L * n * cfg.MaxLLTokens * rowB)
		l.llComb = l.llMeta + L*n*l.llBlock
		l.llSize = l.llComb + align(cfg.MaxLLTokens*K*rowB)
	}
	for _, s := range []int{l.inSize, l.recvSize, l.combSize, l.llSize} {
		if s < 0 || s > maxWindow {
			return l, fmt.Errorf("moe: a window of %d bytes: too large: %w", s, ErrBadArgument)
		}
	}
	return l, nil
}

// New builds this rank's Handle over g and registers its windows.
// Collective: every rank calls it with an equal cfg, in the same order as
// its other collective gin calls.
//
// Errors: ErrBadArgument for a bad cfg; ErrNotSupported (an
// *gin.UnsupportedError) on a provider without strong signals or
// SignalAdd; gin.ErrUnknownContext for contexts the Comm lacks; and
// RegisterWindow's errors.
func New[T Elem](ctx context.Context, g *gin.Comm, cfg Config) (*Handle[T], error) {
	if g == nil {
		return nil, fmt.Errorf("moe: nil comm: %w", ErrBadArgument)
	}
	n := g.Size()
	if cfg.Contexts == 0 {
		cfg.Contexts = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if err := cfg.check(n); err != nil {
		return nil, err
	}
	caps := g.Capabilities()
	if !caps.StrongSignals || !caps.SignalAdd {
		// One signal per (source, destination) stands for every row put
		// before it on the context (strong), and carries a row count
		// (SignalAdd).
		return nil, fmt.Errorf("moe: %w", &gin.UnsupportedError{Provider: g.Transport(), Feature: "strong signals with SignalAdd (one signal per source and destination counts its rows)"})
	}
	es := elemSize[T]()
	lay, err := plan(cfg, n, es)
	if err != nil {
		return nil, err
	}
	h := &Handle[T]{g: g, cfg: cfg, n: n, me: g.Rank(), nl: cfg.NumExperts / n, es: es, rowB: cfg.Hidden * es,
		team: g.World(), lay: lay, dataX: make([]uint64, n), combX: make([]uint64, n),
		acc: make([]float32, cfg.Hidden)}
	h.maxP = min(caps.MaxPutSize, 1<<30)
	if h.maxP < h.rowB {
		return nil, fmt.Errorf("moe: provider puts at most %d bytes, a row is %d: %w", caps.MaxPutSize, h.rowB, ErrNotSupported)
	}
	for i := range cfg.Contexts {
		x, err := g.Context(cfg.Context + i)
		if err != nil {
			return nil, fmt.Errorf("moe: %w", err)
		}
		h.xs = append(h.xs, x)
	}
	h.wx = h.xs[0]
	windows := []struct {
		w     **gin.Window
		size  int
		flags gin.WindowFlags
		what  string
	}{
		{&h.sig, lay.sigSize, gin.StrictOrdering, "signals"},
		{&h.in, lay.inSize, 0, "input"},
		{&h.recv, lay.recvSize, 0, "receive"},
		{&h.comb, lay.combSize, 0, "combine"},
		{&h.ll, lay.llSize, 0, "low-latency"},
	}
	for _, w := range windows {
		if *w.w, err = g.RegisterWindow(ctx, w.size, w.flags); err != nil {
			return nil, fmt.Errorf("moe: %s window: %w", w.what, err)
		}
	}
	return h, nil
}

// Close deregisters the Handle's windows. Collective (gin.Window.Close:
// after a control-plane barrier, so no peer still puts into them). Later
// calls return ErrBroken.
func (h *Handle[T]) Close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, w := range []*gin.Window{h.sig, h.in, h.recv, h.comb, h.ll} {
		errs = append(errs, w.Close(ctx))
	}
	h.err = errors.New("handle closed")
	return errors.Join(errs...)
}

// Config is the Handle's configuration, defaults filled in.
func (h *Handle[T]) Config() Config { return h.cfg }

// Rank is this rank; Size the number of ranks.
func (h *Handle[T]) Rank() int { return h.me }

// Size is the number of ranks.
func (h *Handle[T]) Size() int { return h.n }

// LocalExperts is the number of experts on each rank (NumExperts/Size).
func (h *Handle[T]) LocalExperts() int { return h.nl }

// Input is the Handle's input buffer, [max(MaxTokens, MaxLLTokens)][Hidden]
// in this rank's registered memory. Dispatch and DispatchLL copy x into it
// unless x is a prefix of it (starts at Input()[0]): write the tokens here
// to dispatch them without the copy (DeepEP's zero-copy buffers). The
// Handle writes into it only to copy such an x in; change it only between
// calls.
func (h *Handle[T]) Input() []T {
	n := max(h.cfg.MaxTokens, h.cfg.MaxLLTokens) * h.cfg.Hidden
	return unsafeview.As[T](h.in.Bytes()[h.lay.input : h.lay.input+n*h.es])
}

// begin takes the Handle for one call: usable, in state want. The caller
// unlocks h.mu when done. A context without a deadline gets
// Config.Timeout.
func (h *Handle[T]) begin(ctx context.Context, name string, want state) (context.Context, context.CancelFunc, error) {
	h.mu.Lock()
	if h.err != nil {
		h.mu.Unlock()
		return nil, nil, fmt.Errorf("moe: %s: %w: %v", name, ErrBroken, h.err)
	}
	if h.state != want {
		h.mu.Unlock()
		return nil, nil, fmt.Errorf("moe: %s in state %v: %w", name, h.state, ErrOrder)
	}
	if _, ok := ctx.Deadline(); !ok {
		c, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
		return c, cancel, nil
	}
	return ctx, func() {}, nil
}

// fail breaks the Handle with err (a failure after data or signals moved)
// and returns it wrapped with the call's name.
func (h *Handle[T]) fail(name string, err error) error {
	h.err = err
	return fmt.Errorf("moe: %s: %w", name, err)
}

// ctxOf is the context that posts to world rank r, and its offset.
func (h *Handle[T]) ctxOf(r int) (int, *gin.Context) {
	i := r % len(h.xs)
	return i, h.xs[i]
}

// spread runs fn(x, r) for every destination rank r, rotated from this
// rank's right neighbour (so that at each step ranks write to different
// peers). With one context it runs in this goroutine; with more, each
// context's destinations are run by their own goroutine. It returns the
// first error.
func (h *Handle[T]) spread(fn func(x *gin.Context, r int) error) error {
	if len(h.xs) == 1 {
		for i := 1; i <= h.n; i++ {
			if err := fn(h.xs[0], (h.me+i)%h.n); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, len(h.xs))
	var wg sync.WaitGroup
	for c := range h.xs {
		wg.Go(func() {
			for i := 1; i <= h.n; i++ {
				r := (h.me + i) % h.n
				if ci, x := h.ctxOf(r); ci == c {
					if err := fn(x, r); err != nil {
						errs[c] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// split runs fn over [0, n) in len(h.xs) parts, each in its own
// goroutine (in this one with one context), each with its own scratch row
// of Hidden float32s.
func (h *Handle[T]) split(n int, fn func(lo, hi int, acc []float32)) {
	parts := len(h.xs)
	if parts == 1 || n < 2*parts {
		fn(0, n, h.acc)
		return
	}
	for len(h.accs) < parts {
		h.accs = append(h.accs, make([]float32, h.cfg.Hidden))
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { fn(p*n/parts, (p+1)*n/parts, h.accs[p]) })
	}
	wg.Wait()
}

// flush makes every source of this call's puts reusable.
func (h *Handle[T]) flush(ctx context.Context) error {
	for _, x := range h.xs {
		if err := x.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// wait waits until the signal word at byte offset off of this rank's
// signal window reaches least (gin's rolling order), paced by
// Config.Pacing.
func (h *Handle[T]) wait(ctx context.Context, off int, least uint64, what string) error {
	p := h.cfg.Pacing
	if !p.OSYield && !p.Gosched {
		if _, err := h.wx.WaitSignalVA(ctx, h.sig, off, least, 64); err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		return nil
	}
	pace := p.Pace()
	for {
		v, err := h.wx.ReadSignalVA(h.sig, off, 64)
		if err != nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		if gin.RollingLE(least, v, ^uint64(0)) {
			return nil
		}
		if !pace.Idle() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wait for %s (signal at %d of %d): %w", what, v, least, err)
		}
	}
}

// rowBytes is the byte view of rows [from, from+n) of a row region at base.
func (h *Handle[T]) rowBytes(w *gin.Window, base, from, n int) []byte {
	b := w.Bytes()
	off := base + from*h.rowB
	return b[off : off+n*h.rowB : off+n*h.rowB]
}

// put puts n rows from (src, srcOff) to rank r's (dst, dstOff), in puts of
// at most maxP bytes (or one per row with PerRow); the last carries
// remote, the others nothing. Every put but the last is aggregated: the
// last rings the doorbell once for all.
func (h *Handle[T]) put(x *gin.Context, r int, dst *gin.Window, dstOff int, src *gin.Window, srcOff, n int, remote gin.RemoteAction) error {
	if n == 0 {
		if remote == gin.None {
			return nil
		}
		return x.Signal(h.team, r, remote)
	}
	step := max(h.maxP/h.rowB, 1)
	if h.cfg.PerRow {
		step = 1
	}
	for n > 0 {
		k := min(n, step)
		act, opts := gin.None, []gin.Option{gin.Aggregate}
		if k == n {
			act, opts = remote, nil
		}
		if err := x.Put(h.team, r, dst, dstOff, src, srcOff, k*h.rowB, act, gin.LocalNone, opts...); err != nil {
			return fmt.Errorf("put %d rows to rank %d: %w", k, r, err)
		}
		dstOff, srcOff, n = dstOff+k*h.rowB, srcOff+k*h.rowB, n-k
	}
	return nil
}
