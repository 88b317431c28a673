package bootstrap

import (
	"context"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Bootstrap is the control plane of one rank: collective exchange of small
// descriptors and failure notices. Its methods are safe for concurrent use;
// collectives of one rank are serialized.
type Bootstrap interface {
	// Rank is this rank's world rank, in [0, Size).
	Rank() int
	// Size is the number of ranks of the job.
	Size() int
	// Job is the job name shared by all ranks and unique per job; it names
	// shared-memory regions (rdmactor-<job>-r<rank>-<seq>).
	Job() string
	// AllGather is a collective: every rank calls it in the same order with
	// its data (may be empty, up to a few MiB) and gets all ranks' data
	// indexed by rank (an entry is nil where that rank passed no data). The
	// result is the caller's own copy. It returns ctx's error (wrapped) when
	// ctx ends first, a *rdma.PeerLostError when a rank is lost (or closed
	// without joining this collective), and rdma.ErrClosed after Close.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
	// Barrier is a collective that returns once every rank has entered it;
	// errors as for AllGather.
	Barrier(ctx context.Context) error
	// OnLost registers f to be called once per lost rank, from a bootstrap
	// goroutine (calls for one Bootstrap are made one at a time, in the order
	// losses were seen). If ranks were already lost, f is called for them
	// right away (from that goroutine). f is not called after Close.
	OnLost(f func(*rdma.PeerLostError))
	// Err returns the first peer-lost error seen (a *rdma.PeerLostError), or nil.
	Err() error
	// Close leaves the job: it tells the others this rank leaves cleanly and
	// releases the control plane, within a second whether or not the peers
	// answer (a peer that has not learnt of the leave by then sees it as a
	// loss). Pending collectives of this rank fail with rdma.ErrClosed.
	// Later calls return the first call's result.
	Close() error
}
