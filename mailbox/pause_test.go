package mailbox_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A held pair is read no further: its sender blocks and then gets
// ErrRingFull, while another sender's frames keep arriving; after Resume
// every accepted frame arrives once, in order, the held one first.
func TestHoldBlocksSenderUntilResume(t *testing.T) {
	const timeout = 100 * time.Millisecond
	_, boxes := local(t, 3, mailbox.Config{SendTimeout: timeout})
	ctx := testutils.Deadline(t, 30*time.Second)

	var holding atomic.Bool
	holding.Store(true)
	var offered atomic.Int64 // Frame calls for rank 0's frames while holding
	// The race detector does not see the synchronization through the
	// signal word: the tracker is locked for the test to read.
	var mu sync.Mutex
	k := newTracker(1)
	var fromTwo int
	require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(from int, _ mailbox.Kind, body []byte) {
		if from == 0 && holding.Load() {
			offered.Add(1)
			boxes[1].Hold(from)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if from == 2 {
			fromTwo++
			return
		}
		k.frame(from, body)
	}}))

	// Rank 0 sends until its ring is full and a Send times out.
	accepted := uint64(0)
	buf := make([]byte, 64<<10)
	send := func() error {
		b := buf[:bodySize(0, accepted)]
		fillBody(b, 0, accepted)
		return boxes[0].Send(1, 1, b)
	}
	for {
		err := send()
		if err == nil {
			accepted++
			continue
		}
		require.ErrorIs(t, err, mailbox.ErrRingFull)
		break
	}
	require.Greater(t, accepted, uint64(8))
	held := offered.Load()
	assert.LessOrEqual(t, held, int64(3), "a held frame is offered again only after Resume")
	assert.GreaterOrEqual(t, boxes[1].Stats().Holds, uint64(1))

	// Rank 2's pair is not held.
	for range 100 {
		require.NoError(t, boxes[2].Send(1, 1, []byte("other")))
	}
	for {
		mu.Lock()
		n, total := fromTwo, k.total
		mu.Unlock()
		if n == 100 {
			assert.Zero(t, total, "nothing of the held pair was consumed")
			break
		}
		require.NoError(t, ctx.Err(), "%d of rank 2's 100 frames arrived while rank 0's pair was held", n)
		time.Sleep(time.Millisecond)
	}

	// Resume before the loop holds again: the held frame comes back, and
	// with it everything rank 0 accepted.
	holding.Store(false)
	boxes[1].Resume(0)
	for {
		mu.Lock()
		total, err := k.total, k.err
		mu.Unlock()
		require.NoError(t, err)
		if total == int(accepted) {
			break
		}
		require.NoError(t, ctx.Err(), "%d of %d accepted frames arrived after Resume", total, accepted)
		time.Sleep(time.Millisecond)
	}
	// Credit came back: the ring takes frames again.
	require.NoError(t, send())
	accepted++
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return k.total == int(accepted) && k.err == nil
	}, 10*time.Second, time.Millisecond)
}

// A Resume that comes before the Hold it answers (the Handler's waker ran
// first) ends that Hold: the frame is offered again at once rather than
// waiting for another frame or Resume.
func TestResumeBeforeHold(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10})
	got := make(chan string, 4)
	var tries atomic.Int64
	require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(from int, _ mailbox.Kind, body []byte) {
		if tries.Add(1) == 1 {
			boxes[1].Resume(from) // as a waker on another goroutine may, before Hold
			boxes[1].Hold(from)
			return
		}
		got <- string(body)
	}}))
	require.NoError(t, boxes[0].Send(1, 1, []byte("once")))
	select {
	case s := <-got:
		assert.Equal(t, "once", s)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the held frame was not offered again")
	}
	assert.EqualValues(t, 2, tries.Load())
	assert.EqualValues(t, 1, boxes[1].Stats().Holds)
	assert.EqualValues(t, 1, boxes[1].Stats().FramesReceived)
	select {
	case s := <-got:
		require.FailNow(t, "a frame arrived twice", s)
	case <-time.After(50 * time.Millisecond):
	}
}
