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

// RankState is what one rank knows, whatever carries its control messages:
// its collectives in flight, the losses seen, the ranks that left, and the
// OnLost callbacks. It does no I/O. A Bootstrap embeds it for every method
// but Close, gives it the function that sends a contribution, and feeds it
// what arrives (Deliver, Lose, NoteLeft); NewLocal's and package remote's
// share it so that both keep the semantics the Bootstrap docs promise. Its
// methods are safe for concurrent use.
//
// Lock order: coll -> mu. Callbacks run without mu, in the callback goroutine.
type RankState struct {
	rank, size int
	job        string
	contribute func(seq uint64, data []byte)

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

// NewRankState returns the state of rank in a job of size ranks named job.
// contribute sends this rank's data for collective seq to whatever completes
// it; it is called with this rank's collectives serialized, and the result
// comes back through Deliver (the data is the caller's, read only).
func NewRankState(rank, size int, job string, contribute func(seq uint64, data []byte)) *RankState {
	return &RankState{
		rank:       rank,
		size:       size,
		job:        job,
		contribute: contribute,
		waiters:    make(map[uint64]chan gatherResult),
		leftAt:     make(map[int]uint64),
		lostC:      make(chan struct{}),
	}
}

// Rank returns this rank's world rank.
func (s *RankState) Rank() int { return s.rank }

// Size returns the number of ranks.
func (s *RankState) Size() int { return s.size }

// Job returns the job name.
func (s *RankState) Job() string { return s.job }

// AllGather: see Bootstrap.
func (s *RankState) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	s.coll.Lock()
	defer s.coll.Unlock()
	seq, ch, err := s.begin()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	s.contribute(seq, data)
	res, err := s.wait(ctx, seq, ch)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	return res, nil
}

// Barrier: see Bootstrap.
func (s *RankState) Barrier(ctx context.Context) error {
	_, err := s.AllGather(ctx, nil)
	return err
}

// Lost returns a channel that is closed at the first loss (Err).
func (s *RankState) Lost() <-chan struct{} { return s.lostC }

// begin starts a collective: it returns its sequence number and the channel
// its result arrives on, or the error that ends it at once (closed, a rank
// lost, or a rank that left before this sequence number). Caller holds coll.
func (s *RankState) begin() (uint64, chan gatherResult, error) {
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
			s.Lose(&rdma.PeerLostError{Rank: r, Reason: reasonClosed})
			return 0, nil, s.Err()
		}
	}
	ch := make(chan gatherResult, 1)
	s.waiters[seq] = ch
	s.mu.Unlock()
	return seq, ch, nil
}

// wait waits for the result of collective seq or for ctx to end.
func (s *RankState) wait(ctx context.Context, seq uint64, ch chan gatherResult) ([][]byte, error) {
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

// Deliver hands the result of collective seq, all ranks' data by rank, to
// its waiter, if one still waits.
func (s *RankState) Deliver(seq uint64, data [][]byte) {
	s.mu.Lock()
	ch := s.waiters[seq]
	delete(s.waiters, seq)
	s.mu.Unlock()
	if ch != nil {
		ch <- gatherResult{data: data}
	}
}

// Lose records that e.Rank is lost (once per rank), fails every pending
// collective with the first loss and queues the OnLost callbacks. It does
// nothing after Leave.
func (s *RankState) Lose(e *rdma.PeerLostError) {
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

// NoteLeft records that rank left after joining collective at (its last);
// pending collectives after at can no longer complete and fail with a loss
// of that rank, reason "closed".
func (s *RankState) NoteLeft(rank int, at uint64) {
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
		s.Lose(&rdma.PeerLostError{Rank: rank, Reason: reasonClosed})
	}
}

// Leave marks the rank closed, fails pending collectives with
// rdma.ErrClosed and returns the sequence number of the last collective this
// rank joined (what the others need to tell a clean leave from a loss).
func (s *RankState) Leave() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.failLocked(rdma.ErrClosed)
	}
	return s.seq
}

// failLocked ends every pending collective with err. Lock must be held.
func (s *RankState) failLocked(err error) {
	for seq, ch := range s.waiters {
		ch <- gatherResult{err: err}
		delete(s.waiters, seq)
	}
}

// Err returns the first loss seen, or nil.
func (s *RankState) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lost) == 0 {
		return nil
	}
	return s.lost[0]
}

// OnLost registers f and queues it for the losses already seen.
func (s *RankState) OnLost(f func(*rdma.PeerLostError)) {
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
func (s *RankState) queueLocked(c lostCall) {
	s.queue = append(s.queue, c)
	if !s.queueBusy {
		s.queueBusy = true
		go s.runQueue()
	}
}

// runQueue runs queued callbacks one at a time, without the lock, until the
// queue is empty.
func (s *RankState) runQueue() {
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

// Round gathers the contributions of one collective, by rank.
type Round struct {
	data  [][]byte
	have  []bool
	count int
}

// NewRound returns an empty round of n ranks.
func NewRound(n int) *Round { return &Round{data: make([][]byte, n), have: make([]bool, n)} }

// Add stores rank's data (a second contribution of one rank is ignored) and
// reports whether all ranks are in.
func (r *Round) Add(rank int, data []byte) bool {
	if !r.have[rank] {
		r.have[rank] = true
		r.data[rank] = data
		r.count++
	}
	return r.count == len(r.data)
}

// Data returns the contributions by rank; an entry is nil where that rank
// gave no data.
func (r *Round) Data() [][]byte { return r.data }
