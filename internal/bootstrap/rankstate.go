package bootstrap

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// reasonClosed is the PeerLostError reason for a rank that closed before a
// collective it had to join.
const reasonClosed = "closed"

// rankState is what one rank knows, shared by the local and the remote
// implementation: its collectives in flight, the losses seen, the ranks that
// left, and the OnLost callbacks. It does no I/O.
//
// Lock order: coll -> mu. Callbacks run without mu, in the callback goroutine.
type rankState struct {
	rank, size int

	coll sync.Mutex // serializes this rank's collectives (held for a whole collective)

	mu      sync.Mutex
	seq     uint64                       // collectives started by this rank; the last one's sequence number
	waiters map[uint64]chan gatherResult // collectives waiting for their result, by sequence number
	leftAt  map[int]uint64               // ranks that left, with the last sequence number they joined
	lost    []*rdma.PeerLostError        // losses in the order seen; lost[0] is Err
	lostC   chan struct{}                // closed at the first loss
	closed  bool

	onLost    []func(*rdma.PeerLostError)
	queue     []lostCall // callbacks not yet run
	queueBusy bool       // a goroutine is running queue
}

type gatherResult struct {
	data [][]byte
	err  error
}

type lostCall struct {
	f func(*rdma.PeerLostError)
	e *rdma.PeerLostError
}

func newRankState(rank, size int) *rankState {
	return &rankState{
		rank:    rank,
		size:    size,
		waiters: make(map[uint64]chan gatherResult),
		leftAt:  make(map[int]uint64),
		lostC:   make(chan struct{}),
	}
}

// begin starts a collective: it returns its sequence number and the channel
// its result arrives on, or the error that ends it at once (closed, a rank
// lost, or a rank that left before this sequence number). Caller holds coll.
func (s *rankState) begin() (uint64, chan gatherResult, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, nil, rdma.ErrClosed
	}
	if len(s.lost) > 0 {
		err := s.lost[0]
		s.mu.Unlock()
		return 0, nil, err
	}
	s.seq++
	seq := s.seq
	for r, at := range s.leftAt {
		if seq > at {
			s.mu.Unlock()
			s.lose(&rdma.PeerLostError{Rank: r, Reason: reasonClosed})
			return 0, nil, s.Err()
		}
	}
	ch := make(chan gatherResult, 1)
	s.waiters[seq] = ch
	s.mu.Unlock()
	return seq, ch, nil
}

// wait waits for the result of collective seq or for ctx to end.
func (s *rankState) wait(ctx context.Context, seq uint64, ch chan gatherResult) ([][]byte, error) {
	select {
	case r := <-ch:
		return r.data, r.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	delete(s.waiters, seq)
	s.mu.Unlock()
	select {
	case r := <-ch: // the result raced with ctx
		return r.data, r.err
	default:
		return nil, fmt.Errorf("collective %d: %w", seq, ctx.Err())
	}
}

// deliver hands the result of collective seq to its waiter, if any still waits.
func (s *rankState) deliver(seq uint64, data [][]byte) {
	s.mu.Lock()
	ch := s.waiters[seq]
	delete(s.waiters, seq)
	s.mu.Unlock()
	if ch != nil {
		ch <- gatherResult{data: data}
	}
}

// lose records that e.Rank is lost (once per rank), fails every pending
// collective with the first loss and queues the OnLost callbacks. It does
// nothing after close.
func (s *rankState) lose(e *rdma.PeerLostError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, l := range s.lost {
		if l.Rank == e.Rank {
			return
		}
	}
	s.lost = append(s.lost, e)
	if len(s.lost) == 1 {
		close(s.lostC)
	}
	s.failLocked(s.lost[0])
	for _, f := range s.onLost {
		s.queueLocked(lostCall{f, e})
	}
}

// noteLeft records that rank left after joining collective at (its last);
// pending collectives after at can no longer complete and fail with a loss
// of that rank, reason "closed".
func (s *rankState) noteLeft(rank int, at uint64) {
	s.mu.Lock()
	s.leftAt[rank] = at
	blocked := false
	for seq := range s.waiters {
		if seq > at {
			blocked = true
		}
	}
	s.mu.Unlock()
	if blocked {
		s.lose(&rdma.PeerLostError{Rank: rank, Reason: reasonClosed})
	}
}

// close marks the rank closed, fails pending collectives with rdma.ErrClosed
// and returns the sequence number of the last collective this rank joined.
func (s *rankState) close() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.failLocked(rdma.ErrClosed)
	}
	return s.seq
}

// failLocked ends every pending collective with err. Lock must be held.
func (s *rankState) failLocked(err error) {
	for seq, ch := range s.waiters {
		ch <- gatherResult{err: err}
		delete(s.waiters, seq)
	}
}

// Err returns the first loss seen, or nil.
func (s *rankState) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lost) == 0 {
		return nil
	}
	return s.lost[0]
}

// OnLost registers f and queues it for the losses already seen.
func (s *rankState) OnLost(f func(*rdma.PeerLostError)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.onLost = append(s.onLost, f)
	for _, e := range s.lost {
		s.queueLocked(lostCall{f, e})
	}
}

// queueLocked queues a callback and starts the goroutine that runs the queue
// if none runs. Lock must be held.
func (s *rankState) queueLocked(c lostCall) {
	s.queue = append(s.queue, c)
	if !s.queueBusy {
		s.queueBusy = true
		go s.runQueue()
	}
}

// runQueue runs queued callbacks one at a time, without the lock, until the
// queue is empty.
func (s *rankState) runQueue() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 || s.closed {
			s.queue = nil
			s.queueBusy = false
			s.mu.Unlock()
			return
		}
		c := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		c.f(c.e)
	}
}
