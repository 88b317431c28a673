package mailbox_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
)

// filler appends up to max bytes of seq, as much as the room offered
// holds, and records the room it was offered.
type filler struct {
	seq      byte
	max      int
	offered  int
	overflow bool // append one byte past the room
}

func (f *filler) AppendBody(dst []byte) ([]byte, error) {
	f.offered = cap(dst)
	n := min(f.max, cap(dst))
	if f.overflow {
		n = cap(dst) + 1
	}
	for range n {
		dst = append(dst, f.seq)
	}
	return dst, nil
}

// SendAppendRoom offers at least the room asked for: it waits for the
// receiver's credit when the ring is full and goes to the next lap when
// the lap's end leaves less; every piece arrives whole and in order.
func TestSendAppendRoom(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: mailbox.MinRingBytes, MaxFrame: 1024})
	got := make(chan []byte, 64)
	release := make(chan struct{})
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) {
			<-release // the receiver takes nothing until told: the ring fills
			got <- bytes.Clone(body)
		},
	}))
	const pieces, least = 40, 600
	sent := make(chan error, 1)
	f := &filler{max: 1000}
	go func() {
		for i := range pieces {
			f.seq = byte(i)
			if err := boxes[0].SendAppendRoom(1, 1, least, f); err != nil {
				sent <- err
				return
			}
			if f.offered < least {
				sent <- fmt.Errorf("piece %d: %d bytes offered, %d asked", i, f.offered, least)
				return
			}
		}
		sent <- nil
	}()
	require.Eventually(t, func() bool { return boxes[0].Stats().CreditWaits > 0 }, 10*time.Second, time.Millisecond,
		"the sender should wait for credit while the receiver takes nothing")
	close(release)
	n := 0
	for n < pieces {
		select {
		case b := <-got:
			require.NotEmpty(t, b)
			require.Equal(t, bytes.Repeat([]byte{byte(n)}, len(b)), b, "piece %d", n)
			n++
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d pieces arrived", n, pieces)
		}
	}
	select {
	case err := <-sent:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the sends never returned")
	}
}

// A least over the frame limit is ErrFrameTooLarge; a body that outgrows
// the room is an error, and nothing of it is sent.
func TestSendAppendRoomErrors(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: mailbox.MinRingBytes, MaxFrame: 1024})
	got := make(chan []byte, 4)
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) { got <- bytes.Clone(body) },
	}))
	require.ErrorIs(t, boxes[0].SendAppendRoom(1, 1, 1024, &filler{max: 1}), mailbox.ErrFrameTooLarge)
	require.ErrorIs(t, boxes[0].SendAppendRoom(1, 1, 100, &filler{overflow: true}), gin.ErrBadArgument)
	require.NoError(t, boxes[0].SendAppendRoom(1, 1, 100, &filler{seq: 7, max: 3}))
	select {
	case b := <-got:
		require.Equal(t, []byte{7, 7, 7}, b, "only the good piece arrives")
	case <-time.After(10 * time.Second):
		t.Fatal("the piece never arrived")
	}
}
