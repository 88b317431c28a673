//go:build ofi && cgo && linux

package mailbox_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
)

// TestCreditPollOFI floods a slow receiver over libfabric's tcp provider,
// whose progress the waiters drive, through the smallest ring: the
// sender's credit waits poll before they block (Mailbox.PollsCredit), and
// every frame still arrives once, in order.
func TestCreditPollOFI(t *testing.T) {
	testutils.OFIProvider(t, "tcp")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Transport: "ofi", Signals: mailbox.SignalsNeeded(2)})
	require.NoError(t, err)
	cfg := mailbox.Config{RingBytes: mailbox.MinRingBytes}
	boxes := make([]*mailbox.Mailbox, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Go(func() { boxes[r], errs[r] = mailbox.New(ctx, comms[r], cfg) })
	}
	wg.Wait()
	for r := range comms {
		require.NoError(t, errs[r], "rank %d", r)
	}
	t.Cleanup(func() {
		for r := range comms {
			assert.NoError(t, boxes[r].Close())
			comms[r].Close()
		}
	})
	if comms[0].Oversubscribed() {
		assert.False(t, boxes[0].PollsCredit(), "an oversubscribed host blocks at once")
	} else {
		assert.True(t, boxes[0].PollsCredit(), "ofi's progress is driven: credit waits poll first")
	}

	const frames = 3000
	next := uint64(0)
	done := make(chan struct{})
	boxes[1].Start(mailbox.Handler{Frame: func(_ int, _ mailbox.Kind, body []byte) {
		if v := binary.LittleEndian.Uint64(body); v != next {
			t.Errorf("frame %d arrived as number %d", v, next)
		}
		next++
		time.Sleep(2 * time.Microsecond) // slower than the sender
		if next == frames {
			close(done)
		}
	}})
	boxes[0].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}})
	body := make([]byte, 256)
	for i := range uint64(frames) {
		binary.LittleEndian.PutUint64(body, i)
		require.NoError(t, boxes[0].Send(1, 1, body))
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%d of %d frames arrived", next, frames)
	}
	assert.NotZero(t, boxes[0].Stats().CreditWaits, "the sender never waited for credit")
}
