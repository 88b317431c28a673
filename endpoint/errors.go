package endpoint

import (
	"errors"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// ErrRingFull is returned by a post when the endpoint's SQ stayed full
// (depth entries reserved and not completed) for the whole post timeout.
// Nothing of the post was queued.
var ErrRingFull = errors.New("send queue full")

// ErrClosed is returned by every call after the Manager was closed: the
// providers' sentinel (rdma.ErrClosed), so one errors.Is serves every
// layer.
var ErrClosed = rdma.ErrClosed

// RingFullError says which endpoint stayed full and for how long; it
// matches ErrRingFull.
type RingFullError struct {
	Peer   int
	Route  string // "data" or "signal N"
	Depth  int
	Waited time.Duration
}

func (e *RingFullError) Error() string {
	return fmt.Sprintf("endpoint to rank %d (%s): %v: %d entries in flight for %v", e.Peer, e.Route, ErrRingFull, e.Depth, e.Waited)
}

// Is reports whether target is ErrRingFull.
func (e *RingFullError) Is(target error) bool { return target == ErrRingFull }

// Fault is what the endpoints' supervisor records when an endpoint actor
// fails: the QP fault that stopped it.
type Fault struct {
	Peer  int    // world rank of the endpoint's peer
	Route string // "data" or "signal N"
	Err   error  // the *rdma.QPError
}
