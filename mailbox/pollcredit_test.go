package mailbox_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/mailbox"
)

// TestPollCredit checks the credit poll that precedes a credit wait's block
// where progress is driven: it returns at once when the credit signal
// already moved, at its deadline when nothing comes, and as soon as the
// receiver returns credit. On shm, whose puts complete at the doorbell,
// credit waits block without it.
func TestPollCredit(t *testing.T) {
	cfg := mailbox.Config{RingBytes: mailbox.MinRingBytes}
	_, boxes := local(t, 2, cfg)
	assert.False(t, boxes[0].PollsCredit(), "shm completes puts inline: credit waits block at once")

	assert.True(t, boxes[0].PollCredit(1, 1<<40, time.Now().Add(time.Minute)), "credit past seen ends the poll at once")

	start := time.Now()
	assert.False(t, boxes[0].PollCredit(1, 0, start.Add(20*time.Millisecond)), "no credit: the poll ends at its deadline")
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	got := make(chan struct{}, 64)
	boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) { got <- struct{}{} }})
	boxes[0].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}})
	body := make([]byte, mailbox.MinRingBytes/8)
	sent := 0
	for ; sent*mailbox.FrameBytes(len(body)) < mailbox.MinRingBytes/2; sent++ {
		require.NoError(t, boxes[0].Send(1, 1, body))
	}
	for range sent {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("frames not delivered")
		}
	}
	start = time.Now()
	require.True(t, boxes[0].PollCredit(1, 0, start.Add(10*time.Second)), "the receiver's credit return ends the poll")
	assert.Less(t, time.Since(start), 5*time.Second)
}
