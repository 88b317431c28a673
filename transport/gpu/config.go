package gpu

import (
	"fmt"
	"time"
)

// Path is how kernels of a Comm reach their peers.
type Path int

const (
	// PathAuto picks PathLSA when every rank can map every other rank's GPU
	// memory (one host, peer access or CUDA IPC), else PathProxy.
	PathAuto Path = iota
	// PathLSA: peers' windows and signals are mapped into kernels
	// (NVLink/PCIe peer access in one process, CUDA IPC across processes);
	// puts are cooperative copies, signals system-scope atomics.
	PathLSA
	// PathProxy: kernels write WQEs into a pinned SQ ring per context and a
	// CPU proxy posts them on the gin.Comm's provider (shm, ofi).
	PathProxy
)

func (p Path) String() string {
	switch p {
	case PathAuto:
		return "auto"
	case PathLSA:
		return "lsa"
	case PathProxy:
		return "proxy"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// ParsePath reads "auto", "lsa" or "proxy".
func ParsePath(s string) (Path, error) {
	for _, p := range []Path{PathAuto, PathLSA, PathProxy} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("gpu path %q: want auto, lsa or proxy", s)
}

// Config fixes a Comm's device-side resources at creation, as
// ncclDevCommRequirements does.
type Config struct {
	// Path: PathAuto (default), PathLSA or PathProxy.
	Path Path
	// Device is this rank's GPU ordinal; nil picks the rank's index in the
	// gin LSA team modulo the number of GPUs (one GPU per local rank, as
	// torchrun's LOCAL_RANK).
	Device *int
	// Signals is the number of device signals per rank; default: the
	// gin.Comm's signals less Barriers (32 of gin's default 64). Device
	// signal s is gin signal s (the proxy path signals with gin's own
	// words; on LSA they are device memory, same indices), and barriers
	// take the next Barriers indices, so Signals+Barriers may not exceed
	// the gin.Comm's Signals().
	Signals int
	// Counters is the number of device counters per rank; default 64.
	Counters int
	// Barriers is the number of BarrierSession indices; default 32, or
	// half the gin.Comm's signals if that is less.
	Barriers int
	// Contexts is the number of proxy rings (one per gin context used);
	// default, and at most, the gin.Comm's ContextCount().
	Contexts int
	// RingDepth is each proxy ring's entries, a power of two of at least 32
	// (a warp's lanes reserve together); default 1024.
	RingDepth int
	// AbortGrace bounds how long Wait gives an aborted kernel to return;
	// default 10 s.
	AbortGrace time.Duration
}

func (c *Config) setDefaults(ginContexts, ginSignals int) error {
	if c.Barriers == 0 {
		c.Barriers = min(32, ginSignals/2)
	}
	if c.Signals == 0 {
		c.Signals = ginSignals - c.Barriers
	}
	if c.Counters == 0 {
		c.Counters = 64
	}
	if c.Contexts == 0 {
		c.Contexts = ginContexts
	}
	if c.RingDepth == 0 {
		c.RingDepth = 1024
	}
	if c.AbortGrace == 0 {
		c.AbortGrace = 10 * time.Second
	}
	switch {
	case c.Path < PathAuto || c.Path > PathProxy:
		return fmt.Errorf("gpu config: path %v: %w", c.Path, ErrBadArgument)
	case c.Signals < 0 || c.Counters < 0 || c.Barriers < 0 || c.Signals+c.Barriers > 1<<20 || c.Counters > 1<<20:
		return fmt.Errorf("gpu config: %d signals, %d barriers, %d counters: %w", c.Signals, c.Barriers, c.Counters, ErrBadArgument)
	case c.Signals+c.Barriers > ginSignals:
		return fmt.Errorf("gpu config: %d signals + %d barriers need %d gin signals, the gin comm has %d (raise gin.Config.Signals): %w",
			c.Signals, c.Barriers, c.Signals+c.Barriers, ginSignals, ErrBadArgument)
	case c.Contexts < 1 || c.Contexts > ginContexts:
		return fmt.Errorf("gpu config: %d contexts, the gin comm has %d: %w", c.Contexts, ginContexts, ErrBadArgument)
	case c.RingDepth < 32 || c.RingDepth&(c.RingDepth-1) != 0 || c.RingDepth > 1<<20:
		// At least a warp: the lanes of a warp reserve their slots together.
		return fmt.Errorf("gpu config: ring depth %d: want a power of two in 32..2^20: %w", c.RingDepth, ErrBadArgument)
	}
	return nil
}
