package idle

import (
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
