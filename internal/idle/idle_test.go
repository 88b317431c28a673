package idle

import (
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
// either kind of yield: on one processor, a goroutine that the waiter
// started sets the flag within the first few yields, not after the
// runtime's 10 ms preemption (thousands of calls).
func TestYieldPhaseRunsQueuedGoroutines(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, quiet := range []bool{false, true} {
		var flag atomic.Bool
		b := New(Strategy{Spins: 0, Yields: 1 << 30, MinSleep: time.Microsecond, MaxSleep: time.Microsecond, QuietYield: quiet})
		go flag.Store(true)
		calls := 0
		for !flag.Load() && calls < 1<<20 {
			b.Idle()
			calls++
		}
		assert.True(t, flag.Load(), "QuietYield %v: the queued goroutine never ran", quiet)
		assert.LessOrEqual(t, calls, 16, "QuietYield %v: yields before the queued goroutine ran", quiet)
	}
}
