package idle

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBackoffPhases(t *testing.T) {
	b := New(Strategy{Spins: 3, Yields: 2, MinSleep: time.Microsecond, MaxSleep: 4 * time.Microsecond})
	var parked []bool
	for i := 0; i < 9; i++ {
		parked = append(parked, b.Idle())
	}
	assert.Equal(t, []bool{false, false, false, false, false, true, true, true, true}, parked)
	assert.Equal(t, 4*time.Microsecond, b.sleep, "sleep is capped at MaxSleep")
	b.Reset()
	assert.False(t, b.Idle(), "reset starts with spinning again")
}

func TestBackoffParksWhenIdle(t *testing.T) {
	// An idle waiter must give the CPU back: 200 idles past the spin and
	// yield phases take at least 200 * MinSleep.
	b := New(Strategy{Spins: 1, Yields: 1, MinSleep: 50 * time.Microsecond, MaxSleep: 50 * time.Microsecond})
	start := time.Now()
	for i := 0; i < 202; i++ {
		b.Idle()
	}
	assert.GreaterOrEqual(t, time.Since(start), 200*50*time.Microsecond)
}

// driver records how a driven Backoff used it.
type driver struct {
	polls int
	waits []time.Duration
}

func (d *driver) Poll() int                    { d.polls++; return 0 }
func (d *driver) PollWait(t time.Duration) int { d.waits = append(d.waits, t); return 0 }

func TestDrivenBackoff(t *testing.T) {
	// The spin phase polls the driver; after it every Idle blocks in
	// PollWait for MaxSleep and reports a park (callers check deadlines);
	// there is no yield phase and no Go sleep.
	d := &driver{}
	s := Strategy{Spins: 3, Yields: 2, MinSleep: time.Microsecond, MaxSleep: time.Millisecond}
	b := NewDriven(s, d)
	var parked []bool
	for i := 0; i < 6; i++ {
		parked = append(parked, b.Idle())
	}
	assert.Equal(t, []bool{false, false, false, true, true, true}, parked)
	assert.Equal(t, 3, d.polls)
	assert.Equal(t, []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}, d.waits)
	b.Reset()
	assert.False(t, b.Idle(), "reset starts with polling again")
	assert.Equal(t, 4, d.polls)
}

func TestDrivenNil(t *testing.T) {
	// A nil Driver (a provider that is not an rdma.Poller) is New.
	s := Strategy{Spins: 1, Yields: 1, MinSleep: time.Microsecond, MaxSleep: time.Microsecond}
	assert.Equal(t, New(s), NewDriven(s, nil))
}

// slowBlocker is a Blocker whose polls cost cost each, as a cgo read of a
// completion queue that enters the kernel does.
type slowBlocker struct {
	driver
	cost time.Duration
}

func (d *slowBlocker) Poll() int {
	d.polls++
	time.Sleep(d.cost)
	return 0
}
func (d *slowBlocker) Blocks() bool { return true }
func (d *slowBlocker) Kick()        {}

func TestDrivenSpinBudget(t *testing.T) {
	// Default's 1280 polls at 10 µs each would be 12.8 ms of polling; the
	// wait blocks once MaxDrivenSpin has passed instead, within a clock
	// check's polls of it.
	d := &slowBlocker{cost: 10 * time.Microsecond}
	b := NewDrivenCtx(context.Background(), Default, d)
	defer b.Stop()
	start := time.Now()
	for len(d.waits) == 0 {
		b.Idle()
		require.Less(t, d.polls, Default.Spins+Default.Yields, "the polling phases ran to their end")
	}
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, MaxDrivenSpin, "blocked before the budget")
	assert.Less(t, d.polls, int(MaxDrivenSpin/d.cost)+2*drivenClockEvery)
	b.Reset()
	assert.False(t, b.Idle(), "reset starts with polling again")
	assert.Empty(t, d.waits[1:], "and no block right after it")
}
