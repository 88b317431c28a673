package idle

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

func TestBackoffOSYieldPhase(t *testing.T) {
	// Spins, then Yields, then OSYields calls return false (not parked),
	// each polling first; then parks. A driven wait without a Blocker has
	// no such phase.
	polls := 0
	s := Strategy{Spins: 2, Yields: 1, OSYields: 3, MinSleep: time.Microsecond, MaxSleep: time.Microsecond}
	b := New(s)
	b.SpinWith(func() int { polls++; return 0 })
	var parked []bool
	for i := 0; i < 8; i++ {
		parked = append(parked, b.Idle())
	}
	assert.Equal(t, []bool{false, false, false, false, false, false, true, true}, parked)
	assert.Equal(t, 6, polls, "every call of the three phases polls")

	// The OS-yield phase reports every slowCheckEvery calls, so that
	// its caller sees a deadline even if each yield takes a time slice.
	b = New(Strategy{OSYields: 3 * slowCheckEvery, MinSleep: time.Microsecond, MaxSleep: time.Microsecond})
	reports := 0
	for range 3 * slowCheckEvery {
		if b.Idle() {
			reports++
		}
	}
	assert.Equal(t, 3, reports)

	d := &driver{}
	b = NewDriven(s, d)
	parked = parked[:0]
	for i := 0; i < 4; i++ {
		parked = append(parked, b.Idle())
	}
	assert.Equal(t, []bool{false, false, true, true}, parked, "driven, no Blocker: the spins, then PollWait")

	// Driven with a Blocker: the spins, the yields and the OS yields poll,
	// then it blocks in PollWait.
	bl := &blocker{}
	b = NewDrivenCtx(context.Background(), s, bl)
	defer b.Stop()
	parked = parked[:0]
	for i := 0; i < 8; i++ {
		parked = append(parked, b.Idle())
	}
	assert.Equal(t, []bool{false, false, false, false, false, false, true, true}, parked)
	assert.Equal(t, 6, bl.polls)
	assert.Len(t, bl.waits, 2)
}

// blocker is a driver whose PollWait blocks (an idle.Blocker).
type blocker struct{ driver }

func (*blocker) Blocks() bool { return true }
func (*blocker) Kick()        {}

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

// A yield lets the goroutines queued on the waiter's processor run, with
// every kind of yield (an OS yield goes with a Go-level one): on one processor, a goroutine that the waiter
// started sets the flag within the first few yields, not after the
// runtime's 10 ms preemption (thousands of calls).
func TestYieldPhaseRunsQueuedGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, c := range []struct{ quiet, os bool }{{false, false}, {true, false}, {false, true}} {
		var flag atomic.Bool
		s := Strategy{Spins: 0, Yields: 1 << 30, MinSleep: time.Microsecond, MaxSleep: time.Microsecond, QuietYield: c.quiet}
		if c.os {
			s.Yields, s.OSYields = 0, 1<<30
		}
		b := New(s)
		go flag.Store(true)
		calls := 0
		for !flag.Load() && calls < 1<<20 {
			b.Idle()
			calls++
		}
		assert.True(t, flag.Load(), "%+v: the queued goroutine never ran", c)
		assert.LessOrEqual(t, calls, 16, "%+v: yields before the queued goroutine ran", c)
	}
}
