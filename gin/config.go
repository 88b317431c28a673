package gin

import (
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/internal/idle"
)

// Config fixes a Comm's resources at creation, as ncclDevCommRequirements
// does (ginSignalCount, ginCounterCount, ginContextCount).
type Config struct {
	// Transport names the provider: "auto" (shm within a host, ofi between
	// hosts; the default where registered, as transport/rdma/std does),
	// "shm" (the default otherwise) or "ofi"; RDMACTOR_TRANSPORT for Init.
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
	// default: the ranks of one host on a load/store provider (shm, auto)
	// where each host holds one block of consecutive ranks of one size
	// (NCCL's LSA team), 1 otherwise.
	// It must divide the world size. Smaller values emulate several nodes
	// (and so rail teams) on one host.
	LSASize int
	// PostTimeout bounds how long a put waits for SQ room; default 10 s.
	PostTimeout time.Duration
	// Idle paces every wait: spin, yield, then block in the provider (or
	// park on timers where it offers nothing to block in). Default
	// DefaultIdle, or OversubscribedIdle when the host runs more ranks
	// than it has processors (Comm.Oversubscribed), with QuietYield set
	// where the ranks are goroutines of one process (NewLocal).
	// Latency-critical ranks that own a core raise Yields.
	Idle IdleStrategy
	// Require lists what the provider must offer; NewComm fails otherwise.
	Require Requirements
	// PeerFailure says what a lost rank fails: FailComm (the default, as
	// MPI's errors-are-fatal) every later post and wait of the Comm;
	// FailPeer only the posts to that rank (ErrPeerLost naming it), while
	// the other ranks go on. Package actor uses FailPeer.
	PeerFailure FailureMode
	// Peers, where not nil, are the world ranks this rank exchanges with
	// (NCCL 2.32's NCCL_GIN_CONNECTION_CUSTOM_ARRAY, the ginCustomArray of
	// ncclDevCommRequirements): windows import, and contexts connect to,
	// only these ranks and this one, so a rank pays no address-vector
	// entry, connection or mapping for the others. Puts, gets and signals
	// to another rank, and CheckTeam over a team holding one, fail with
	// ErrNotPeer. Nil: every rank (the default); empty: this rank alone.
	// Duplicates and this rank are ignored; a rank outside the world
	// fails NewComm. Unlike the rest of Config it is each rank's own, and
	// the sets must be symmetric: if rank a lists b, b lists a (NewComm
	// checks this on every rank and fails on all of them otherwise).
	Peers []int
}

// FailureMode is Config.PeerFailure.
type FailureMode int

const (
	// FailComm: once any rank is lost, every post and wait of the Comm
	// returns ErrPeerLost (MPI-style programs, collectives that need all).
	FailComm FailureMode = iota
	// FailPeer: posts to a lost rank return ErrPeerLost; posts to others
	// and waits go on. A wait for signals only the lost rank would send
	// does not end by itself: layers that know a signal's senders watch
	// Comm.PeerErr or OnPeerLost (the mailbox does).
	FailPeer
)

// IdleStrategy paces waits: Spins busy iterations, then Yields
// runtime.Gosched calls, then OSYields calls that give the processor to
// any runnable thread (sched_yield(2); OversubscribedIdle), then a block
// in the provider (shm: the signal doorbell's futex; ofi: the completion
// queue's wait) or, where there is none, sleeps doubling from MinSleep to
// MaxSleep (an Aeron-style backoff idle strategy).
type IdleStrategy = idle.Strategy

// DefaultIdle spins 256 times and yields 1024 times (about 100 to 200 µs
// when nothing else runs), then blocks. The spin phase outlasts a round
// trip and a burst's gaps, so busy traffic never pays a wake-up, and is
// shorter than a wake-up from a blocked wait costs on small VMs (a few
// hundred µs), so an idle rank costs little CPU.
var DefaultIdle = idle.Default

// OversubscribedIdle is the default on a host with more ranks than
// processors: after a short spin it gives the processor to whichever
// thread of the host is runnable (OSYields: sched_yield(2)) 256 times,
// then blocks. A spinning rank would hold the processor that the rank it
// waits for needs; one that blocks at once pays a wake-up for each answer
// (tens to hundreds of µs on small VMs). Ranks that are goroutines of one
// process skip the OSYields phase (NewLocal). Where a wait drives a NIC's
// progress (ofi), each of those calls polls the CQ first.
var OversubscribedIdle = idle.Strategy{Spins: 64, Yields: 0, OSYields: 256, MinSleep: idle.Default.MinSleep, MaxSleep: idle.Default.MaxSleep}

// Requirements are provider capabilities a program depends on.
type Requirements struct {
	StrongSignals bool // signals imply every earlier put of the context to the peer (ginStrongSignalsRequired, NCCL 2.30)
	SignalAdd     bool // SignalAdd with values other than 1
	VASignals     bool // signals at window offsets (ginVaSignalsRequired, NCCL 2.30)
	MaxPutSize    int  // bytes one put must be able to carry
}

func (c *Config) setDefaults() error {
	if c.Transport == "" {
		c.Transport = defaultTransport()
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
		c.PostTimeout = endpoint.DefaultPostTimeout
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
