package mailbox_test

import (
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
			got := make(chan struct{}, frames)
			require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) { got <- struct{}{} }}))
			for range frames {
				time.Sleep(gap)
				require.NoError(t, boxes[0].Send(1, 1, []byte("tick")))
				select {
				case <-got:
				case <-time.After(10 * time.Second):
					t.Fatal("frame did not arrive")
				}
			}
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
