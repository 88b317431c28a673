package endpoint

import (
	"runtime"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// sq is a send queue ring: the pure core an Endpoint drives (no I/O here).
//
// Four monotonically increasing sequence numbers describe it; for any time
// completed <= posted <= ready <= reserved and reserved-completed <= depth:
//
//	completed  posted        ready        reserved
//	    |  in the NIC |  published  | being filled |
//
// Producers reserve with a compare-and-swap on reserved that first checks
// room (submitted - completed + n <= depth, the SQ backpressure rule of the
// aws-ofi-nccl EFA-GDA backend): a reservation is only ever taken when its
// slots are free, so a producer whose deadline expires while waiting for
// room holds nothing and leaves no hole. (An unconditional atomic add, as on
// GPUs with no deadlines, would leave reserved slots that nobody fills.) No
// lock is held at any point: a failed CAS only means another producer won
// and this one retries.
//
// Filled entries are published in sequence order by moving ready from base
// to base+1 once it reaches base (the ordered publish of DeepEP's use of
// NVSHMEM IBGDA); publishing also takes the entry's ticket from its group,
// so the group's doorbell can post the entries of all its endpoints in the
// order they were published. The doorbell hands [posted, ready) to the QP.
// Completions arrive in post order and move completed.
type sq struct {
	mask     uint64
	wqes     []rdma.WQE
	counters []*atomic.Uint64 // local action of each entry (CounterInc), nil for none
	tickets  []uint64         // group-wide publish order of each entry

	_         [56]byte
	reserved  atomic.Uint64
	_         [56]byte
	ready     atomic.Uint64
	_         [56]byte
	posted    atomic.Uint64
	_         [56]byte
	completed atomic.Uint64
	_         [56]byte
}

func newSQ(depth int) *sq {
	if depth <= 0 || depth&(depth-1) != 0 {
		panic("endpoint: SQ depth must be a power of two")
	}
	return &sq{
		mask:     uint64(depth - 1),
		wqes:     make([]rdma.WQE, depth),
		counters: make([]*atomic.Uint64, depth),
		tickets:  make([]uint64, depth),
	}
}

func (q *sq) depth() uint64 { return q.mask + 1 }

// tryReserve takes n consecutive sequence numbers if the ring has room for
// them and returns the first. It fails only when the ring is full.
func (q *sq) tryReserve(n uint64) (base uint64, ok bool) {
	for {
		r := q.reserved.Load()
		if r+n-q.completed.Load() > q.depth() {
			return 0, false
		}
		if q.reserved.CompareAndSwap(r, r+n) {
			return r, true
		}
	}
}

// slot returns the entry for sequence seq; valid between its reservation and
// its publish.
func (q *sq) slot(seq uint64) (*rdma.WQE, **atomic.Uint64) {
	i := seq & q.mask
	return &q.wqes[i], &q.counters[i]
}

// publish makes entry seq visible to the doorbell once every earlier
// reservation is published, with the next ticket of tickets. Earlier
// producers hold free slots already (they reserved before us), so the wait
// is only for them to finish their stores.
func (q *sq) publish(seq uint64, tickets *atomic.Uint64) {
	for spins := 0; q.ready.Load() != seq; spins++ {
		if spins > 64 {
			runtime.Gosched()
		}
	}
	// Only the owner of seq moves ready from seq, so plain stores suffice
	// until the release of ready below.
	q.tickets[seq&q.mask] = tickets.Add(1)
	q.ready.Store(seq + 1)
}

// ticket is the publish ticket of published entry seq.
func (q *sq) ticket(seq uint64) uint64 { return q.tickets[seq&q.mask] }

// pending reports whether published entries wait for a doorbell.
func (q *sq) pending() bool { return q.posted.Load() < q.ready.Load() }

// inFlight is the number of entries reserved but not yet completed.
func (q *sq) inFlight() uint64 { return q.reserved.Load() - q.completed.Load() }

// span returns the published, unposted entries [from, to) as at most two
// contiguous slices of the ring (the second is non-empty when the range wraps).
func (q *sq) span(from, to uint64) (a, b []rdma.WQE) {
	if from == to {
		return nil, nil
	}
	i, j := from&q.mask, to&q.mask
	if i < j {
		return q.wqes[i:j], nil
	}
	return q.wqes[i:], q.wqes[:j]
}
