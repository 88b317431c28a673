package gpu

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// words is an array of 64-bit words the host reads and writes: signals and
// counters, in device memory (LSA) or pinned host memory (proxy).
type words interface {
	load(i int) (uint64, error)
	store(i int, v uint64) error
}

// hostWords: pinned or registered host memory, read with atomic loads
// (acquire) as kernels write it with system-scope atomics.
type hostWords struct{ b []byte }

func (h hostWords) load(i int) (uint64, error) { return memword.Uint64(h.b, 8*i).Load(), nil }
func (h hostWords) store(i int, v uint64) error {
	memword.Uint64(h.b, 8*i).Store(v)
	return nil
}

// devWords: device memory, read and written with synchronous 8-byte
// copies (they do not wait for kernels: Comm streams are non-blocking).
type devWords struct {
	c *cuda.Context
	p cuda.DevicePtr
}

func (d devWords) load(i int) (uint64, error) {
	b := make([]byte, 8)
	if err := d.c.CopyFromDevice(b, d.p+cuda.DevicePtr(8*i)); err != nil {
		return 0, err
	}
	return leU64(b), nil
}

func (d devWords) store(i int, v uint64) error {
	b := make([]byte, 8)
	for k := range 8 {
		b[k] = byte(v >> (8 * k))
	}
	return d.c.CopyToDevice(d.p+cuda.DevicePtr(8*i), b)
}

func mask(bits, max int) (uint64, error) {
	if bits < 1 || bits > max {
		return 0, fmt.Errorf("bits %d: want 1..%d: %w", bits, max, gin.ErrBadArgument)
	}
	if bits == 64 {
		return ^uint64(0), nil
	}
	return 1<<uint(bits) - 1, nil
}

func (g *Comm) signalIndex(s gin.Signal) error {
	if g.closed.Load() {
		return ErrClosed
	}
	if int(s) >= g.cfg.Signals {
		return fmt.Errorf("device signal %d of %d: %w", s, g.cfg.Signals, gin.ErrUnknownSignal)
	}
	return nil
}

func (g *Comm) counterIndex(c gin.Counter) error {
	if g.closed.Load() {
		return ErrClosed
	}
	if int(c) >= g.cfg.Counters {
		return fmt.Errorf("device counter %d of %d: %w", c, g.cfg.Counters, gin.ErrUnknownCounter)
	}
	return nil
}

// ReadSignal returns the low bits bits of device signal s of this rank,
// the word kernels wait on (Gin::readSignal).
func (g *Comm) ReadSignal(s gin.Signal, bits int) (uint64, error) {
	m, err := mask(bits, 64)
	if err != nil {
		return 0, err
	}
	if err := g.signalIndex(s); err != nil {
		return 0, err
	}
	v, err := g.signals.load(int(s))
	return v & m, err
}

// WaitSignal waits until device signal s reaches least (rolling, bits
// wide) or ctx ends.
func (g *Comm) WaitSignal(ctx context.Context, s gin.Signal, least uint64, bits int) (uint64, error) {
	if _, err := g.ReadSignal(s, bits); err != nil {
		return 0, err
	}
	return g.waitWord(ctx, g.signals, int(s), least, bits, 64, "signal")
}

// ResetSignal sets device signal s and its barrier shadow to 0; it may not
// race with peers signalling s. Where device signals are gin's
// (GinSignals), it is gin's ResetSignal, which also clears the signal's
// SignalInc/SignalAdd mode: the only reset that does (a kernel's
// resetSignal clears the value only).
func (g *Comm) ResetSignal(s gin.Signal) error {
	if err := g.signalIndex(s); err != nil {
		return err
	}
	if g.GinSignals() {
		x, err := g.gc.Context(0)
		if err != nil {
			return err
		}
		if err := x.ResetSignal(s); err != nil {
			return err
		}
	} else if err := g.signals.store(int(s), 0); err != nil {
		return err
	}
	return devWords{g.ctx, g.shadows}.store(int(s), 0)
}

// ReadCounter returns the low bits bits (1..56) of device counter c.
func (g *Comm) ReadCounter(c gin.Counter, bits int) (uint64, error) {
	m, err := mask(bits, 56)
	if err != nil {
		return 0, err
	}
	if err := g.counterIndex(c); err != nil {
		return 0, err
	}
	v, err := g.counters.load(int(c))
	return v & m, err
}

// WaitCounter waits until device counter c reaches least or ctx ends.
func (g *Comm) WaitCounter(ctx context.Context, c gin.Counter, least uint64, bits int) (uint64, error) {
	if _, err := g.ReadCounter(c, bits); err != nil {
		return 0, err
	}
	return g.waitWord(ctx, g.counters, int(c), least, bits, 56, "counter")
}

// ResetCounter sets device counter c to 0 (no put may still tick it).
func (g *Comm) ResetCounter(c gin.Counter) error {
	if err := g.counterIndex(c); err != nil {
		return err
	}
	return g.counters.store(int(c), 0)
}

func (g *Comm) waitWord(ctx context.Context, w words, i int, least uint64, bits, maxBits int, what string) (uint64, error) {
	m, _ := mask(bits, maxBits)
	least &= m
	b := idle.New(idle.Strategy{Spins: 64, Yields: 64, MinSleep: time.Microsecond, MaxSleep: time.Millisecond})
	for {
		v, err := w.load(i)
		if err != nil {
			return 0, err
		}
		if v &= m; gin.RollingLE(least, v, m) {
			return v, nil
		}
		if b.Idle() {
			if err := ctx.Err(); err != nil {
				return v, fmt.Errorf("wait device %s %d for %d (at %d): %w", what, i, least, v, err)
			}
		}
	}
}

// SignalInc is the gin remote action that adds 1 to device signal s of a
// peer from Go, as a kernel's SignalInc{s} does: on the proxy path,
// gin.SignalInc(s) (device signal s is gin signal s, see GinSignals; the
// two are interchangeable), or in the VA-signal fallback a VA signal of
// the signal window. x.Put(..., g.SignalInc(s)) lands where kernels wait.
// On the LSA path it returns ErrNotSupported: device signals are device
// memory there; signal them from a kernel.
func (g *Comm) SignalInc(s gin.Signal) (gin.RemoteAction, error) { return g.hostSignal(s, true, 1) }

// SignalAdd is SignalInc for SignalAdd{s, v}: gin.SignalAdd(s, v) on the
// proxy path. Between two resets, a signal takes SignalInc or SignalAdd,
// not both (gin.ErrMixedSignalOps).
func (g *Comm) SignalAdd(s gin.Signal, v uint64) (gin.RemoteAction, error) {
	return g.hostSignal(s, false, v)
}

func (g *Comm) hostSignal(s gin.Signal, inc bool, v uint64) (gin.RemoteAction, error) {
	if err := g.signalIndex(s); err != nil {
		return gin.None, err
	}
	if g.path != PathProxy {
		return gin.None, fmt.Errorf("host-side signal on the %v path: %w", g.path, ErrNotSupported)
	}
	return g.remoteAction(s, inc, v), nil
}
