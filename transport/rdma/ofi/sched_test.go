//go:build ofi && cgo && linux

package ofi

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestYieldEvery checks that a waiter spinning on Poll lets the goroutines
// queued beside it run on every schedEvery-th call, and not before: with
// one P, a goroutine started by the spinner runs only when it yields.
func TestYieldEvery(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var n atomic.Uint64
	var ran atomic.Bool
	go ran.Store(true)
	for range schedEvery - 1 {
		yieldEvery(&n)
	}
	require.False(t, ran.Load(), "yielded before call %d", schedEvery)
	yieldEvery(&n)
	require.True(t, ran.Load(), "call %d did not yield", schedEvery)
}

// TestSchedPost checks that a producer's Post yields once schedWork of
// work has passed since its last yield, and not before: with one P, a
// goroutine started by the producer runs only when it yields.
func TestSchedPost(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	q := &qp{}
	for range 2 {
		var ran atomic.Bool
		go ran.Store(true)
		q.schedPost(schedWork - schedOpWork)
		require.False(t, ran.Load(), "yielded before schedWork of work")
		q.schedPost(schedOpWork)
		require.True(t, ran.Load(), "schedWork of work did not yield")
		require.Zero(t, q.postWork, "the count starts again after a yield")
	}
}
