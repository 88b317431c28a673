package gin

import (
	"context"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Bootstrap is the control plane a Comm is built on: collective exchange of
// descriptors and notices of lost ranks. Init uses the launcher's (gRPC,
// protoactor-go remote); NewLocal uses an in-process one.
type Bootstrap interface {
	Rank() int
	Size() int
	// Job names the job; shared-memory files carry it.
	Job() string
	// AllGather is collective: it returns every rank's data by rank.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
	// Barrier is collective.
	Barrier(ctx context.Context) error
	// OnLost registers f for each rank lost (called at once for ranks
	// already lost).
	OnLost(f func(*rdma.PeerLostError))
	Close() error
}
