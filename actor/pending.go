package actor

import (
	"bytes"
	"strings"
	"sync"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// pendingFutures tracks the futures of this rank that wait for an answer
// from another rank (RequestFuture's sender PIDs), so that a rank's loss
// fails them at once rather than at their timeouts: each gets a
// DeadLetterResponse, which a protoactor-go Future turns into
// ErrDeadLetter. A future leaves the table when a message for it arrives
// from that rank; ones that timed out are swept when the table grows.
type pendingFutures struct {
	mu     sync.Mutex
	byRank []map[string]struct{} // future ids by the rank asked
	gone   []bool                // by rank: taken, so later futures fail at once
	n      int
}

// futurePrefix starts the Id of protoactor-go's future PIDs
// (actor/future.go: "future" + "$" + a number).
const futurePrefix = "future$"

// maxPending is the table size past which an add sweeps futures that no
// longer exist (answered by another path, or timed out).
const maxPending = 1 << 12

func isFuture(p *PID) bool { return p != nil && strings.HasPrefix(p.Id, futurePrefix) }

// isFutureID reports whether id, as it came in a frame, is a future's.
func isFutureID(id []byte) bool { return bytes.HasPrefix(id, []byte(futurePrefix)) }

// add records that local future id waits for rank. A request whose send
// raced with the rank's loss (sent, then the rank taken before this add)
// fails here, at once, rather than at its timeout.
func (t *pendingFutures) add(rank int, id string, size int, reg *protoactor.ProcessRegistryValue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRank == nil {
		t.byRank = make([]map[string]struct{}, size)
		t.gone = make([]bool, size)
	}
	if t.gone[rank] {
		failFuture(reg, rank, id)
		return
	}
	if t.byRank[rank] == nil {
		t.byRank[rank] = map[string]struct{}{}
	}
	if _, ok := t.byRank[rank][id]; ok {
		return
	}
	if t.n >= maxPending {
		t.sweep(reg)
	}
	t.byRank[rank][id] = struct{}{}
	t.n++
}

// done records that a message for local future id came from rank.
func (t *pendingFutures) done(rank int, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRank != nil && t.byRank[rank] != nil {
		if _, ok := t.byRank[rank][id]; ok {
			delete(t.byRank[rank], id)
			t.n--
		}
	}
}

// take removes and returns the futures waiting for rank, which is gone:
// later adds for it fail their future at once.
func (t *pendingFutures) take(rank int, size int) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byRank == nil {
		t.byRank = make([]map[string]struct{}, size)
		t.gone = make([]bool, size)
	}
	t.gone[rank] = true
	if t.byRank[rank] == nil {
		return nil
	}
	ids := make([]string, 0, len(t.byRank[rank]))
	for id := range t.byRank[rank] {
		ids = append(ids, id)
	}
	t.n -= len(ids)
	t.byRank[rank] = nil
	return ids
}

// sweep drops futures the registry no longer holds. t.mu must be held.
func (t *pendingFutures) sweep(reg *protoactor.ProcessRegistryValue) {
	for _, m := range t.byRank {
		for id := range m {
			if _, ok := reg.GetLocal(id); !ok {
				delete(m, id)
				t.n--
			}
		}
	}
}

// failPending answers every future waiting for rank with a
// DeadLetterResponse: their Results return ErrDeadLetter now.
func (n *Node) failPending(rank int) {
	for _, id := range n.pending.take(rank, n.size) {
		failFuture(n.system.ProcessRegistry, rank, id)
	}
}

// failFuture answers local future id, which waits for rank, with a
// DeadLetterResponse (protoactor-go's Future then fails with
// ErrDeadLetter), if it still exists.
func failFuture(reg *protoactor.ProcessRegistryValue, rank int, id string) {
	if proc, ok := reg.GetLocal(id); ok {
		proc.SendUserMessage(NewPID(reg.Address, id), &DeadLetterResponse{Target: NewPID(AddressOf(rank), "")})
	}
}
