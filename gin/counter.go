package gin

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rdmactor/rdmactor/endpoint"
	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// counterBits is the width of counters (ncclGinCounter_t: "limited to
// storing values of at most 56 bits").
const counterBits = 56

// counterWord checks the Comm, counter n and bits (1..56) and returns the
// counter's word and the mask.
func (x *Context) counterWord(n Counter, bits int) (*atomic.Uint64, uint64, error) {
	if err := x.c.check(); err != nil {
		return nil, 0, err
	}
	m, err := mask(bits, counterBits)
	if err != nil {
		return nil, 0, err
	}
	if int(n) >= len(x.c.counters) {
		return nil, 0, fmt.Errorf("counter %d of %d: %w", n, len(x.c.counters), ErrUnknownCounter)
	}
	return &x.c.counters[n], m, nil
}

// ReadCounter returns the low bits bits (1..56) of counter n
// (ncclGin::readCounter, NCCL 2.28).
func (x *Context) ReadCounter(n Counter, bits int) (uint64, error) {
	w, m, err := x.counterWord(n, bits)
	if err != nil {
		return 0, err
	}
	return w.Load() & m, nil
}

// WaitCounter waits until the low bits bits of counter n reach least in
// rolling order (ncclGin::waitCounter). Ends as WaitSignal does.
func (x *Context) WaitCounter(ctx context.Context, n Counter, least uint64, bits int) (uint64, error) {
	w, m, err := x.counterWord(n, bits)
	if err != nil {
		return 0, err
	}
	var d idle.Driver
	if x.c.poller != nil {
		d = reporter{x.c.poller, x.c.eps}
	}
	return x.c.waitDriving(ctx, w, least, m, "counter", int(n), d, nil) // no put rings a counter
}

// reporter drives a Poller provider and then has the endpoints report the
// completions found: a counter ticks (CounterInc, a local action) when its
// put's completion is reported, which the endpoint actors otherwise do
// lazily on such providers (endpoint/actor.go).
type reporter struct {
	p   rdma.Poller
	eps *endpoint.Manager
}

func (r reporter) Poll() int { return r.p.Poll() + r.eps.Progress() }

// PollWait reports first: what another thread read from the CQ is not
// worth a block in it.
func (r reporter) PollWait(d time.Duration) int {
	if n := r.eps.Progress(); n > 0 {
		return n
	}
	return r.p.PollWait(d) + r.eps.Progress()
}

// ResetCounter sets counter n to 0 (ncclGin::resetCounter); it may not race
// with puts still ticking it (Flush first).
func (x *Context) ResetCounter(n Counter) error {
	w, _, err := x.counterWord(n, counterBits)
	if err != nil {
		return err
	}
	w.Store(0)
	return nil
}
