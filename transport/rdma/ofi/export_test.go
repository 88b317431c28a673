//go:build ofi && cgo && linux

package ofi

import "github.com/rdmactor/rdmactor/transport/rdma"

// HoldProgress makes p's progress goroutine stand back, as it does while a
// waiter polls, until release is called: whatever the provider does
// meanwhile is driven by its callers (rdma.Poller). When it returns, the
// goroutine reads the CQ no more: a read it had started has ended (it held
// pollMu), and it looks at waiters before every read and every block.
// PollWait never blocks meanwhile (it stands back for waiters too), so a
// held provider is polled, not woken.
func HoldProgress(p *Provider) (release func()) {
	p.waiters.Add(1)
	p.wakeup()
	p.pollMu.Lock()
	//lint:ignore SA2001 an empty critical section: waits out a read in progress
	p.pollMu.Unlock()
	held := true
	return func() {
		if held {
			held = false
			p.waiters.Add(-1)
		}
	}
}

// PollWaits is how many PollWait calls p has had.
func PollWaits(p *Provider) uint64 { return p.pollWaits.Load() }

// PostWork is the work q's Post counted since its last yield (schedPost).
func PostWork(q rdma.QP) int { return q.(*qp).postWork }

// SchedOpWork is what one posted WQE counts beside its length.
const SchedOpWork = schedOpWork
