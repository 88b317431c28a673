//go:build !linux

package futex

import (
	"sync/atomic"
	"time"
)

// pollStep is how often a sleeper looks at the word where no futex exists.
const pollStep = 200 * time.Microsecond

// wait polls *w with short sleeps for up to d: without futex(2) a ring
// costs the sleeper up to pollStep of latency.
func wait(w *atomic.Uint32, val uint32, d time.Duration) {
	end := time.Now().Add(d)
	for w.Load() == val && time.Now().Before(end) {
		time.Sleep(min(pollStep, time.Until(end)))
	}
}

func wake(*atomic.Uint32) {}
