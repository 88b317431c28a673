package gin

import (
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/internal/idle"
)

// Config fixes a Comm's resources at creation, as ncclDevCommRequirements
// does (ginSignalCount, ginCounterCount, ginContextCount).
type Config struct {
	// Transport names the provider: "shm" (default, or RDMACTOR_TRANSPORT
	// for Init).
	Transport string
	// Signals is the number of indexed signals per rank; default 64.
	Signals int
	// Counters is the number of local counters; default 64.
	Counters int
	// Contexts is the number of contexts (ordering domains); default 1.
	Contexts int
	// QPsPerPeer is how many QPs per peer the contexts share (N:m);
	// default 1 (every context on one QP).
	QPsPerPeer int
	// SQDepth is the SQ entries per endpoint, a power of two; default 512.
	SQDepth int
	// LSASize is the number of consecutive ranks that form one LSA team;
	// default: the whole world on a load/store provider (shm), 1 otherwise.
	// It must divide the world size. Smaller values emulate several nodes
	// (and so rail teams) on one host.
	LSASize int
	// PostTimeout bounds how long a put waits for SQ room; default 10 s.
	PostTimeout time.Duration
	// Idle paces every wait (spin, yield, park); default DefaultIdle.
	// Latency-critical ranks that own a core raise Spins.
	Idle IdleStrategy
	// Require lists what the provider must offer; NewComm fails otherwise.
	Require Requirements
}

// IdleStrategy paces waits: Spins busy iterations, then Yields
// runtime.Gosched calls, then sleeps doubling from MinSleep to MaxSleep
// (an Aeron-style backoff idle strategy).
type IdleStrategy = idle.Strategy

// DefaultIdle spins 256 times, yields 64 times, then parks from 1 µs up
// to 1 ms.
var DefaultIdle = idle.Default

// Requirements are provider capabilities a program depends on.
type Requirements struct {
	StrongSignals bool // signals imply every earlier put of the context to the peer
	SignalAdd     bool // SignalAdd with values other than 1
	MaxPutSize    int  // bytes one put must be able to carry
}

func (c *Config) setDefaults() error {
	if c.Transport == "" {
		c.Transport = "shm"
	}
	if c.Signals == 0 {
		c.Signals = 64
	}
	if c.Counters == 0 {
		c.Counters = 64
	}
	if c.Contexts == 0 {
		c.Contexts = 1
	}
	if c.PostTimeout == 0 {
		c.PostTimeout = 10 * time.Second
	}
	if c.Idle == (IdleStrategy{}) {
		c.Idle = DefaultIdle
	}
	if c.Signals < 0 || c.Counters < 0 || c.Contexts < 0 || c.QPsPerPeer < 0 || c.LSASize < 0 || c.SQDepth < 0 {
		return fmt.Errorf("config: negative count: %w", ErrBadArgument)
	}
	if d := c.SQDepth; d != 0 && (d&(d-1) != 0 || d > 1<<20) {
		return fmt.Errorf("config: SQ depth %d: want a power of two up to 2^20: %w", d, ErrBadArgument)
	}
	if c.Contexts > 1<<12 {
		return fmt.Errorf("config: %d contexts, at most 4096: %w", c.Contexts, ErrBadArgument)
	}
	return nil
}
