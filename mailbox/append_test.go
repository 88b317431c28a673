package mailbox_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
)

// appender writes test message seq of stream with append, as an encoder
// would, and counts where it was asked to write.
type appender struct {
	stream, seq     uint64
	inPlace, ownBuf int
	own             []byte
	err             error
	panics          bool
}

func (a *appender) AppendBody(dst []byte) ([]byte, error) {
	if a.panics {
		panic("appender")
	}
	if a.err != nil {
		return append(dst, "partial"...), a.err
	}
	if dst == nil {
		a.ownBuf++
		dst = a.own[:0]
	} else {
		a.inPlace++
	}
	n := bodySize(a.stream, a.seq)
	body := append(dst, make([]byte, n)...) // grows out of dst when n passes its room
	fillBody(body[len(body)-n:], a.stream, a.seq)
	return body, nil
}

// SendAppend bodies arrive in order and intact whether they were written
// in place, outgrew the room in place or were written elsewhere (at lap
// ends, with little credit), across many laps of the ring.
func TestSendAppendInPlaceAndFallback(t *testing.T) {
	perStream := scale(20000, 2000)
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 512 << 10})
	ctx := testutils.Deadline(t, time.Minute)
	k := newTracker(1)
	done := make(chan struct{})
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(from int, _ mailbox.Kind, body []byte) {
			k.frame(from, body)
			if k.total == perStream {
				close(done)
			}
		},
		Error: func(err error) { t.Errorf("rank 1: %v", err) },
	}))
	a := &appender{own: make([]byte, 0, 64<<10)}
	for seq := range uint64(perStream) {
		a.seq = seq
		body, err := boxes[0].SendAppend(1, 1, a)
		require.NoError(t, err, "message %d", seq)
		require.Nil(t, body)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%d of %d frames arrived", k.total, perStream)
	}
	require.NoError(t, k.err)
	assert.Greater(t, a.inPlace, perStream/2, "most bodies should be written in place")
}

// At a lap's end with less room than a useful body, the appender gets no
// room (a nil dst), writes to its own buffer, and the frame is copied.
func TestSendAppendLapEnd(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: mailbox.MinRingBytes, MaxFrame: 1024})
	got := make(chan []byte, 16)
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) { got <- append([]byte(nil), body...) },
	}))
	// Frames of 16+1000 bytes take 1016 of the 4096-byte ring each: the
	// fifth finds 32 bytes left in the lap.
	a := &sized{n: 1000, own: make([]byte, 0, 1024)}
	for i := range 8 {
		a.seq = byte(i)
		_, err := boxes[0].SendAppend(1, 1, a)
		require.NoError(t, err, "message %d", i)
		select {
		case b := <-got:
			require.Len(t, b, 1000)
			require.Equal(t, byte(i), b[0], "message %d", i)
			require.Equal(t, byte(i), b[999], "message %d", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("message %d did not arrive", i)
		}
	}
	assert.Positive(t, a.nilDst, "the lap end should have offered no room")
}

// sized appends n bytes of seq, counting the sends that offered no room.
type sized struct {
	n      int
	seq    byte
	own    []byte
	nilDst int
}

func (a *sized) AppendBody(dst []byte) ([]byte, error) {
	if dst == nil {
		a.nilDst++
		dst = a.own[:0]
	}
	for range a.n {
		dst = append(dst, a.seq)
	}
	return dst, nil
}

// A body over MaxFrame comes back with ErrFrameTooLarge, unsent; an
// appender's error is returned as it is; an appender that panics leaves
// the pair usable. Nothing of those reaches the receiver.
func TestSendAppendErrors(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10})
	got := make(chan []byte, 4)
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) { got <- append([]byte(nil), body...) },
	}))
	big := &appender{stream: 1}
	for bodySize(big.stream, big.seq) <= 16<<10 { // over MaxFrame (RingBytes/4)
		big.seq++
	}
	body, err := boxes[0].SendAppend(1, 1, big)
	require.ErrorIs(t, err, mailbox.ErrFrameTooLarge)
	require.NoError(t, checkBody(body, big.stream, big.seq), "the body comes back whole")

	boom := errors.New("encode failed")
	_, err = boxes[0].TrySendAppend(1, 1, &appender{err: boom})
	require.ErrorIs(t, err, boom)

	func() {
		defer func() { assert.Equal(t, "appender", recover()) }()
		boxes[0].SendAppend(1, 1, &appender{panics: true})
	}()

	require.NoError(t, boxes[0].Send(1, 1, []byte("after")))
	select {
	case b := <-got:
		assert.Equal(t, "after", string(b))
	case <-time.After(10 * time.Second):
		t.Fatal("the frame after the failed appends did not arrive")
	}
	_, err = boxes[0].SendAppend(1, 0, &appender{})
	require.ErrorIs(t, err, mailbox.ErrBadKind)
}

// warmAppender writes n bytes of 'W', as a warm encode would.
type warmAppender struct{ n int }

func (a warmAppender) AppendBody(dst []byte) ([]byte, error) {
	for range a.n {
		dst = append(dst, 'W')
	}
	return dst, nil
}

// WarmSend writes into the staging ring's free room and sends nothing:
// frames sent between warm sends arrive alone, intact and in order, and
// a warm send that does not fit, or that no send could make, reports
// false.
func TestWarmSend(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10})
	got := make(chan []byte, 1024)
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) { got <- append([]byte(nil), body...) },
		Error: func(err error) { t.Errorf("rank 1: %v", err) },
	}))
	const sends = 600 // several laps of the ring
	for i := range sends {
		require.True(t, boxes[0].WarmSend(1, 1, warmAppender{n: 200}), "warm send %d", i)
		body := []byte(fmt.Sprintf("frame %d %s", i, strings.Repeat("x", i%150)))
		require.NoError(t, boxes[0].Send(1, 1, body))
		select {
		case b := <-got:
			require.Equal(t, string(body), string(b))
		case <-time.After(10 * time.Second):
			t.Fatalf("frame %d did not arrive", i)
		}
	}
	assert.Equal(t, uint64(sends), boxes[0].Stats().FramesSent)
	assert.Equal(t, uint64(sends), boxes[1].Stats().FramesReceived)
	assert.False(t, boxes[0].WarmSend(1, 0, warmAppender{n: 8}), "the pad kind")
	assert.False(t, boxes[0].WarmSend(2, 1, warmAppender{n: 8}), "a rank past the world")
	assert.False(t, boxes[0].WarmSend(1, 1, warmAppender{n: 64 << 10}), "a body over MaxFrame")

	// A ring its receiver does not drain: once a send finds it full, a
	// warm send of the same size finds no room either.
	_, full := local(t, 2, mailbox.Config{RingBytes: 16 << 10})
	for full[0].TrySend(1, 1, make([]byte, 1000)) == nil {
	}
	assert.False(t, full[0].WarmSend(1, 1, warmAppender{n: 1000}), "a full ring")
	assert.Zero(t, full[1].Stats().FramesReceived)
}
