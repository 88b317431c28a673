package mailbox_test

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/mailbox"
)

// Frames that recur within Linger find the receive loop awake (it waits
// for the first only); once traffic stops for longer than Linger the loop
// waits (blocks) again. With Linger off, every frame ends a wait.
func TestLinger(t *testing.T) {
	const frames, gap = 10, 20 * time.Millisecond
	for _, tc := range []struct {
		name   string
		linger time.Duration
	}{{"on", 200 * time.Millisecond}, {"off", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			comms, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10, Linger: tc.linger})
			if comms[1].Oversubscribed() {
				t.Skip("Linger is off on an oversubscribed host")
			}
			ticks(t, boxes, frames, gap, mailbox.Handler{})
			waits := boxes[1].Stats().Waits
			if tc.linger < 0 {
				assert.GreaterOrEqual(t, waits, uint64(frames), "without Linger each frame should end a wait")
				return
			}
			assert.LessOrEqual(t, waits, uint64(3), "frames %v apart should find the loop lingering", gap)
			deadline := time.Now().Add(10 * time.Second)
			for boxes[1].Stats().Waits == waits && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			assert.Greater(t, boxes[1].Stats().Waits, waits, "the loop should wait again after Linger of silence")
		})
	}
}

// Under GOMAXPROCS 1 a lingering loop hands the processor back after each
// poll, so a goroutine that yields often (a sender whose writer runs
// between its sends) is not held up by a run of polls at each yield.
func TestLingerYieldsEachPoll(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	comms, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10, Linger: time.Minute})
	if comms[1].Oversubscribed() {
		t.Skip("Linger is off on an oversubscribed host")
	}
	ticks(t, boxes, 2, 5*time.Millisecond, mailbox.Handler{}) // the second frame ends a short idle: the loop lingers
	waits := boxes[1].Stats().Waits
	const yields = 20_000
	start := time.Now()
	for range yields {
		runtime.Gosched()
	}
	per := time.Since(start) / yields
	t.Logf("%v per yield of a goroutine beside the lingering loop", per)
	require.Equal(t, waits, boxes[1].Stats().Waits, "the loop should have lingered")
	// One poll and two switches take about 0.5 µs (5 µs under the race
	// detector); a run of polls per yield takes tens of µs (hundreds).
	bound := time.Duration(scale(5, 25)) * time.Microsecond
	assert.Less(t, per, bound, "the lingering loop held the processor at each yield")
}

// ticks starts boxes[1]'s receive loop with h (its Frame replaced) and
// sends it n frames from boxes[0], gap apart, each after the one before
// arrived.
func ticks(t *testing.T, boxes []*mailbox.Mailbox, n int, gap time.Duration, h mailbox.Handler) {
	t.Helper()
	got := make(chan struct{}, n)
	h.Frame = func(int, mailbox.Kind, []byte) { got <- struct{}{} }
	require.NoError(t, boxes[1].Start(h))
	for range n {
		time.Sleep(gap)
		require.NoError(t, boxes[0].Send(1, 1, []byte("tick")))
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("frame did not arrive")
		}
	}
}

// While the loop lingers it calls Handler.Warm about every WarmEvery once
// it has been idle that long, and not once it waits again; frames that
// come more often than WarmEvery leave it alone; a Warm that panics is
// counted and reported, and the loop goes on. With WarmEvery negative it
// never calls Warm.
func TestWarm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		every  time.Duration
		panic  bool
		frames int
	}{
		{"on", time.Millisecond, false, 5},
		{"off", -1, false, 5},
		{"panics", time.Millisecond, true, 5},
		{"frames more often", 30 * time.Millisecond, false, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const linger = 100 * time.Millisecond
			comms, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10, Linger: linger, WarmEvery: tc.every})
			if comms[1].Oversubscribed() {
				t.Skip("Linger is off on an oversubscribed host")
			}
			var warms atomic.Int64
			reported := make(chan error, 1)
			h := mailbox.Handler{
				Warm: func() {
					warms.Add(1)
					if tc.panic {
						panic("warm")
					}
				},
				Error: func(err error) {
					select {
					case reported <- err:
					default:
					}
				},
			}
			ticks(t, boxes, tc.frames, 10*time.Millisecond, h)
			waits := boxes[1].Stats().Waits
			deadline := time.Now().Add(10 * time.Second)
			for boxes[1].Stats().Waits == waits && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			require.Greater(t, boxes[1].Stats().Waits, waits, "the loop should wait again after Linger of silence")
			n := warms.Load()
			st := boxes[1].Stats()
			assert.Equal(t, uint64(n), st.Warms)
			if tc.every < 0 {
				assert.Zero(t, n, "WarmEvery negative: no Warm")
				return
			}
			if tc.every > 10*time.Millisecond {
				// Frames 10 ms apart for 110 ms, then 100 ms of lingering:
				// calls 30, 60 and 90 ms into it, none between the frames.
				assert.LessOrEqual(t, n, int64(4), "Warm called between frames closer than WarmEvery")
				assert.GreaterOrEqual(t, n, int64(1), "no Warm call while lingering")
				return
			}
			// 40 ms of gaps and 100 ms of lingering at 1 ms: about 130
			// calls; a loaded host may poll less often.
			assert.Greater(t, n, int64(10), "too few Warm calls while lingering")
			time.Sleep(30 * time.Millisecond)
			assert.Equal(t, n, warms.Load(), "Warm called while the loop waited")
			if tc.panic {
				assert.Equal(t, uint64(n), st.HandlerPanics)
				select {
				case err := <-reported:
					assert.Contains(t, err.Error(), "panicked warming")
				default:
					t.Error("the panic was not reported")
				}
				require.NoError(t, boxes[0].Send(1, 1, []byte("after")))
				deadline := time.Now().Add(10 * time.Second)
				want := uint64(tc.frames + 1)
				for boxes[1].Stats().FramesReceived < want && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				assert.Equal(t, want, boxes[1].Stats().FramesReceived, "the loop stopped after a Warm panicked")
			}
		})
	}
}
