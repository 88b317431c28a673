package gin

import (
	"errors"

	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

var (
	// ErrOutOfBounds is returned by Put, PutValue and the VA-signal calls
	// when offset+bytes falls outside a window (or a window offset is
	// misaligned for a signal word). Nothing is written.
	ErrOutOfBounds = rdma.ErrOutOfBounds
	// ErrNotSupported is returned (as *rdma.UnsupportedError) by NewComm
	// when the provider lacks what Config.Require asks for, and by calls
	// the provider cannot carry out.
	ErrNotSupported = rdma.ErrNotSupported
	// ErrMixedSignalOps is returned when SignalInc and SignalAdd reach one
	// signal between two resets (ncclGin_SignalInc, nccl_device/gin.h,
	// NCCL 2.28). With Aggregate, it is returned by the post or Flush that
	// rings the doorbell.
	ErrMixedSignalOps = rdma.ErrMixedSignalOps
	// ErrPeerLost is returned by waits, puts and collectives once a rank
	// of the Comm is lost (as *rdma.PeerLostError naming it).
	ErrPeerLost = rdma.ErrPeerLost
	// ErrPeerOutOfRange is returned when a peer is not in 0..team.NRanks-1
	// or maps outside the world.
	ErrPeerOutOfRange = errors.New("peer outside the team")
	// ErrNotPeer is returned by Put, PutValue, Signal, Get and
	// Comm.CheckTeam for a world rank outside this rank's peer set
	// (Config.Peers): the Comm holds no import of that rank's regions and
	// no connection to it. The error names the rank; nothing is queued.
	ErrNotPeer = errors.New("rank outside this rank's peer set (Config.Peers)")
	// ErrUnknownSignal is returned for a signal index >= Config.Signals.
	ErrUnknownSignal = errors.New("unknown signal id")
	// ErrUnknownCounter is returned for a counter index >= Config.Counters.
	ErrUnknownCounter = errors.New("unknown counter id")
	// ErrUnknownContext is returned by Comm.Context for an index outside
	// 0..ContextCount()-1.
	ErrUnknownContext = errors.New("unknown context")
	// ErrClosed is returned by every call on a Comm, its windows and
	// contexts after Comm.Close, including calls that were waiting when
	// Close came. It is the sentinel of every layer below (endpoints,
	// providers), so errors.Is(err, ErrClosed) holds whichever layer saw
	// the close first.
	ErrClosed = rdma.ErrClosed
	// ErrRingFull is matched by the *RingFullError Put, PutValue and
	// Signal return when the endpoint's send queue stayed full for
	// Config.PostTimeout; nothing of the post was queued
	// (endpoint.ErrRingFull).
	ErrRingFull = endpoint.ErrRingFull
	// ErrBadArgument is returned for malformed arguments not covered above:
	// a PutValue size other than 1, 2, 4 or 8, bits outside 1..64 (1..56
	// for counters), a negative size, windows of unequal size across ranks,
	// a VA signal on a window without StrictOrdering.
	ErrBadArgument = errors.New("bad argument")
)

// UnsupportedError is the error a provider or gin returns for a capability
// it lacks, naming both (rdma.UnsupportedError); it matches
// ErrNotSupported. Layers above gin build and match it under this name.
type UnsupportedError = rdma.UnsupportedError

// PeerLostError names the rank whose loss failed a Comm
// (rdma.PeerLostError); it matches ErrPeerLost.
type PeerLostError = rdma.PeerLostError

// RingFullError names the peer and route whose send queue stayed full and
// for how long (endpoint.RingFullError); it matches ErrRingFull.
type RingFullError = endpoint.RingFullError
