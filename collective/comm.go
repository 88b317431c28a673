package collective

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
)

// Defaults of Config.
const (
	DefaultScratch         = 4 << 20   // bytes per scratch half
	DefaultPiece           = 256 << 10 // bytes per pipelined put
	DefaultOneShotMax      = 64 << 10  // bytes per rank (per pair for AllToAll)
	DefaultRingRanks       = 16        // ranks above which large reductions use a ring
	DefaultHierarchicalMax = 1 << 20   // bytes per rank: the largest hierarchical AllReduce, AllGather or ReduceScatter
)

// Config sets up a Comm. The zero value (with Signal0) is usable.
type Config struct {
	// Signal0 is the first of the Requirement(size) signals the Comm
	// owns: one per sender. Reserve them in gin.Config.Signals when the
	// gin.Comm is made; nothing else may update them.
	Signal0 gin.Signal
	// Context is the gin context index the Comm posts on; default 0.
	// Collectives order their puts within it only.
	Context int
	// Scratch is the size in bytes of each of the two halves of the
	// scratch window every rank registers (rounded up to 64); default
	// DefaultScratch. One-shot algorithms need size*message bytes of a
	// half; a ring works in slices of what fits.
	Scratch int
	// Piece is the size in bytes of the puts a ring or chain pipelines a
	// chunk into; default DefaultPiece.
	Piece int
	// OneShotMax is the largest message (bytes per rank; per pair for
	// AllToAll) that goes through the scratch window in one step, rather
	// than by ring, chain or direct puts; default DefaultOneShotMax;
	// negative: never.
	OneShotMax int
	// RingRanks: AllReduce and ReduceScatter of messages over OneShotMax
	// use TwoShot on Comms of up to this many ranks and Ring on larger
	// ones; default DefaultRingRanks; negative: always Ring. (On shm every
	// rank reaches every other directly and TwoShot's 2 steps beat the
	// ring's 2(n-1); a ring keeps one message in flight per rank, which
	// suits many ranks behind one NIC.)
	RingRanks int
	// Pacing is how waits pass the time (barrier.Pacing): the zero value
	// is gin's WaitSignal with gin.Config.Idle; OSYield for ranks that
	// share cores.
	Pacing barrier.Pacing
	// HostRanks is the size of the rank groups (consecutive world ranks)
	// a small AllReduce, AllGather or Broadcast goes through one rank of,
	// the Hierarchical algorithm; default the gin.Comm's LSA team size (the
	// ranks of one host, as NCCL's LSA team); negative: never. It applies
	// when it splits the Comm into at least two groups of at least two
	// ranks.
	HostRanks int
	// HierarchicalMax is the largest AllReduce, AllGather or ReduceScatter
	// message (bytes per rank; per block for ReduceScatter) that goes
	// Hierarchical where HostRanks applies, as long as the messages fit a
	// scratch half (Scratch/size bytes each; ReduceScatter: a leader's
	// (group+1)*size blocks);
	// default DefaultHierarchicalMax; negative: never. Above OneShotMax it
	// still beats TwoShot and Ring across hosts, since only the leaders'
	// messages cross them. Broadcast goes Hierarchical up to the smaller
	// of this and OneShotMax.
	HierarchicalMax int
}

// Requirement is the number of signals a Comm over nRanks ranks needs
// (one per sender): add it to gin.Config.Signals and pass the first as
// Config.Signal0.
func Requirement(nRanks int) int { return max(nRanks, 0) }

// Comm runs collectives over every rank of a gin.Comm, written on gin's
// one-sided puts and signals alone (NCCL's collectives over its GIN device
// API; OpenSHMEM's collectives over symmetric memory). It owns a scratch
// window and Requirement(size) signals. Build one per rank with New.
//
// Calls on a Comm are serialized (a mutex); they are collective: every
// rank makes the same calls in the same order, with the same counts, data
// types, operators and roots, and with symmetric destinations (see
// Buffer). Each call returns once this rank's part is done and its
// sources may be reused; peers may still be finishing theirs.
type Comm struct {
	g       *gin.Comm
	x       *gin.Context
	cfg     Config
	n, me   int
	world   gin.Team
	scratch *gin.Window // two halves of cfg.Scratch bytes
	maxPut  int         // bytes per message, a multiple of 64
	inline  bool        // the provider completes puts inside Post: no Flush needed
	group   int         // ranks per group of Hierarchical; 0: not used

	mu    sync.Mutex
	seq   uint64   // epochs begun; epoch k uses scratch half k%2
	recvd []uint64 // messages consumed, by sender
	left  []int    // eachArrival's peers still to serve
	err   error    // the failure that broke the Comm
}

// New builds this rank's Comm over g: it registers the scratch window
// (collective: every rank calls New with an equal cfg, in the same order
// as its other collective gin calls).
//
// Errors: gin.ErrUnknownSignal when g lacks the signals, ErrNotSupported
// (a *gin.UnsupportedError) on a provider without strong signals,
// ErrBadArgument for a bad cfg, and RegisterWindow's errors.
func New(ctx context.Context, g *gin.Comm, cfg Config) (*Comm, error) {
	if g == nil {
		return nil, fmt.Errorf("collective: nil comm: %w", ErrBadArgument)
	}
	if cfg.Scratch == 0 {
		cfg.Scratch = DefaultScratch
	}
	if cfg.Piece == 0 {
		cfg.Piece = DefaultPiece
	}
	if cfg.OneShotMax == 0 {
		cfg.OneShotMax = DefaultOneShotMax
	}
	if cfg.RingRanks == 0 {
		cfg.RingRanks = DefaultRingRanks
	}
	if cfg.HierarchicalMax == 0 {
		cfg.HierarchicalMax = DefaultHierarchicalMax
	}
	if cfg.Scratch < 0 || cfg.Piece < 0 {
		return nil, fmt.Errorf("collective: negative scratch or piece size: %w", ErrBadArgument)
	}
	n := g.Size()
	cfg.Scratch = (max(cfg.Scratch, 64*n) + 63) &^ 63
	if need := int(cfg.Signal0) + Requirement(n); need > g.Signals() {
		return nil, fmt.Errorf("collective: signals %d..%d needed, the comm has %d (add Requirement to gin.Config.Signals): %w",
			cfg.Signal0, need-1, g.Signals(), gin.ErrUnknownSignal)
	}
	if caps := g.Capabilities(); !caps.StrongSignals {
		// A sender's signal count may reach a message before the data of
		// an earlier one (weak signals): the per-sender counting breaks.
		return nil, fmt.Errorf("collective: %w", &gin.UnsupportedError{Provider: g.Transport(), Feature: "strong signals (collectives count messages per sender)"})
	}
	maxPut := min(g.Capabilities().MaxPutSize, 1<<30) &^ 63
	if maxPut <= 0 {
		return nil, fmt.Errorf("collective: provider puts of %d bytes at most: %w", g.Capabilities().MaxPutSize, ErrNotSupported)
	}
	cfg.Piece = min(max(cfg.Piece, 64), maxPut)
	x, err := g.Context(cfg.Context)
	if err != nil {
		return nil, fmt.Errorf("collective: %w", err)
	}
	win, err := g.RegisterWindow(ctx, 2*cfg.Scratch, 0)
	if err != nil {
		return nil, fmt.Errorf("collective: scratch window: %w", err)
	}
	return &Comm{g: g, x: x, cfg: cfg, n: n, me: g.Rank(), world: g.World(), scratch: win, maxPut: maxPut, inline: g.Capabilities().Inline,
		group: groupSize(cfg.HostRanks, g.LSA().NRanks, n), recvd: make([]uint64, n), left: make([]int, 0, n)}, nil
}

// groupSize is the group size Hierarchical works with: hostRanks (the
// LSA team size lsa when 0) where that splits n ranks into equal groups,
// at least two of at least two ranks each; else 0.
func groupSize(hostRanks, lsa, n int) int {
	g := hostRanks
	if g == 0 {
		g = lsa
	}
	if g < 2 || g >= n || n%g != 0 {
		return 0
	}
	return g
}

// Rank is this rank's index, 0 <= Rank < Size.
func (c *Comm) Rank() int { return c.me }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.n }

// Gin is the gin.Comm the collectives run on.
func (c *Comm) Gin() *gin.Comm { return c.g }

// Close deregisters the scratch window (gin.Window.Close: collective,
// after a control-plane barrier) and breaks the Comm: later calls return
// ErrBroken. The signals stay the gin.Comm's; a new Comm on them must
// start where this one's counts ended, so reuse them only on a new
// gin.Comm.
func (c *Comm) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = errClosed
	}
	return c.scratch.Close(ctx)
}

// start begins one collective call: calls are serialized, and refused
// once the Comm is broken. Every successful start is paired with finish.
func (c *Comm) start(name string) error {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w: %v", name, ErrBroken, c.err)
	}
	return nil
}

// startCount is start for a call on count elements. A call on none has
// nothing to move: it reports false with a nil error, takes nothing and
// needs no finish. On false with an error, start refused the call.
func (c *Comm) startCount(name string, count int) (bool, error) {
	if count == 0 {
		return false, nil
	}
	if err := c.start(name); err != nil {
		return false, err
	}
	return true, nil
}

// finish ends the call start began: a flush, so the caller may reuse its
// sources, and, if the call failed midway, the Comm is broken.
func (c *Comm) finish(ctx context.Context, name string, err error) error {
	defer c.mu.Unlock()
	if err == nil {
		err = c.flush(ctx)
	}
	if err != nil {
		c.err = err
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// flush makes every put of the Comm so far locally complete (gin's
// Flush). A provider that completes puts inside Post (Capabilities.Inline,
// shm) has nothing to wait for, and reported any error at the post: the
// flush, which would still visit every endpoint group, is skipped.
func (c *Comm) flush(ctx context.Context) error {
	if c.inline {
		return nil
	}
	return c.x.Flush(ctx)
}

// begin starts an epoch and returns the byte offset of its scratch half.
// Epochs alternate halves: a rank in epoch k+1 writes a peer's half only
// after that peer entered epoch k (every algorithm makes each rank's end
// of an epoch depend on every rank's start of it), so the peer is done
// with epoch k-1, the last user of that half.
func (c *Comm) begin() int {
	h := int(c.seq&1) * c.cfg.Scratch
	c.seq++
	return h
}

// slot is the signal at which rank p's messages to this rank are counted.
func (c *Comm) slot(p int) gin.Signal { return c.cfg.Signal0 + gin.Signal(p) }

// messages is how many messages put posts for n bytes.
func (c *Comm) messages(n int) int {
	if n <= c.maxPut {
		return 1
	}
	return (n + c.maxPut - 1) / c.maxPut
}

// put copies n bytes from (src, srcOff) here to (dst, dstOff) at world
// rank p as messages(n) messages, each counted at p (SignalInc); with n 0
// it is one message with no data.
func (c *Comm) put(p int, dst *gin.Window, dstOff int, src *gin.Window, srcOff, n int) error {
	sig := gin.SignalInc(c.slot(c.me))
	if n == 0 {
		return c.x.Signal(c.world, p, sig)
	}
	for n > 0 {
		k := min(n, c.maxPut)
		if err := c.x.Put(c.world, p, dst, dstOff, src, srcOff, k, sig, gin.LocalNone); err != nil {
			return fmt.Errorf("put %d bytes to rank %d: %w", k, p, err)
		}
		dstOff, srcOff, n = dstOff+k, srcOff+k, n-k
	}
	return nil
}

// notify sends p one message with no data.
func (c *Comm) notify(p int) error {
	if err := c.x.Signal(c.world, p, gin.SignalInc(c.slot(c.me))); err != nil {
		return fmt.Errorf("signal rank %d: %w", p, err)
	}
	return nil
}

// await waits for the next k messages from rank p: their data is here
// (strong signals, one context).
func (c *Comm) await(ctx context.Context, p, k int) error {
	want := c.recvd[p] + uint64(k)
	if _, err := c.cfg.Pacing.Wait(ctx, c.x, c.slot(p), want, 64); err != nil {
		return fmt.Errorf("wait for rank %d: %w", p, err)
	}
	c.recvd[p] = want
	return nil
}

// arrived reports whether the next k messages from rank p are here,
// without waiting.
func (c *Comm) arrived(p, k int) (bool, error) {
	v, err := c.x.ReadSignal(c.slot(p), 64)
	if err != nil {
		return false, fmt.Errorf("read signal of rank %d: %w", p, err)
	}
	return v-c.recvd[p]-uint64(k) < 1<<63, nil // rolling: recvd+k <= v
}

// eachArrival calls fn(p) (if not nil) for every peer p (every rank but
// this one),
// each once the next k(p) messages from p arrived, in the order they
// arrive: it serves whichever peers are there, in rotated order, and waits
// (Config.Pacing) only when none is, for the first one left. Ranks that
// share cores thus work for whoever already ran instead of yielding to
// the one they wait for.
func (c *Comm) eachArrival(ctx context.Context, k func(p int) int, fn func(p int) error) error {
	left := c.left[:0]
	for i := 1; i < c.n; i++ {
		left = append(left, c.peer(i))
	}
	for len(left) > 0 {
		served := false
		for i := 0; i < len(left); {
			p := left[i]
			ok, err := c.arrived(p, k(p))
			if err != nil {
				return err
			}
			if !ok {
				i++
				continue
			}
			c.recvd[p] += uint64(k(p))
			if fn != nil {
				if err := fn(p); err != nil {
					return err
				}
			}
			left, served = append(left[:i], left[i+1:]...), true
		}
		if !served {
			p := left[0]
			if err := c.await(ctx, p, k(p)); err != nil {
				return err
			}
			if fn != nil {
				if err := fn(p); err != nil {
					return err
				}
			}
			left = left[1:]
		}
	}
	return nil
}

// peer is the rank i places after this one, wrapping (rotated order, so
// that at step i every rank talks to a different peer).
func (c *Comm) peer(i int) int { return (c.me + i) % c.n }

// scratchBytes is this rank's n bytes of scratch at off.
func (c *Comm) scratchBytes(off, n int) []byte { return c.scratch.Bytes()[off : off+n : off+n] }
