package mailbox_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every rank sends to every other rank from two goroutines at once, with
// mixed sizes up to 64 KiB, through rings small enough to wrap many times;
// each receiver checks per stream that messages arrive in order, complete
// and once.
func TestLocalAllToAllOrder(t *testing.T) {
	const n, streams = 3, 2
	perStream := scale(20000, 1500)
	_, boxes := local(t, n, mailbox.Config{RingBytes: 512 << 10})
	ctx := testutils.Deadline(t, time.Minute)

	want := (n - 1) * streams * perStream
	trackers := make([]*tracker, n)
	done := make([]chan struct{}, n)
	for r := range boxes {
		k := newTracker(streams)
		trackers[r], done[r] = k, make(chan struct{})
		require.NoError(t, boxes[r].Start(mailbox.Handler{
			Frame: func(from int, _ mailbox.Kind, body []byte) {
				k.frame(from, body)
				if k.total == want {
					close(done[r])
				}
			},
			Error: func(err error) { t.Errorf("rank %d: %v", r, err) },
		}))
	}
	var wg sync.WaitGroup
	for s := range boxes {
		for j := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stream := uint64(s*streams + j)
				buf := make([]byte, 64<<10)
				for seq := range uint64(perStream) {
					b := buf[:bodySize(stream, seq)]
					fillBody(b, stream, seq)
					for r := range boxes {
						if r == s {
							continue
						}
						if err := boxes[s].Send(r, 1, b); err != nil {
							t.Errorf("rank %d stream %d: send %d to rank %d: %v", s, stream, seq, r, err)
							return
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	for r := range boxes {
		select {
		case <-done[r]:
		case <-ctx.Done():
			t.Fatalf("rank %d: %d of %d frames arrived", r, trackers[r].total, want)
		}
		require.NoError(t, trackers[r].err, "rank %d", r)
	}
	st := boxes[0].Stats()
	t.Logf("rank 0: %+v", st)
	assert.EqualValues(t, want, st.FramesReceived)
	assert.Greater(t, st.BytesSent, uint64(2*(n-1)*512<<10), "the rings should have wrapped more than twice")
}

// A stalled receiver: senders fill the ring, then block for SendTimeout and
// get a RingFullError; nothing is overwritten. Once the receiver resumes,
// every frame that was accepted arrives, in order, and sends succeed again.
func TestFullRingBlocksThenTimesOut(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const streams = 2
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 16 << 10, SendTimeout: timeout})
	ctx := testutils.Deadline(t, 30*time.Second)

	gate := make(chan struct{})
	next := make([]uint64, streams) // next seq per stream, at the receiver
	var got atomic.Int64
	var orderErr error
	// The race detector does not see the synchronization through the
	// signal word (two mappings of one page: internal/memword): the
	// handler's state is locked for the test to read.
	var mu sync.Mutex
	require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(_ int, _ mailbox.Kind, body []byte) {
		<-gate // stalled until the test opens the gate
		mu.Lock()
		defer mu.Unlock()
		stream, seq, _ := streamOf(body)
		if orderErr == nil && (stream >= streams || seq != next[stream]) {
			orderErr = fmt.Errorf("stream %d: message %d arrived, want %d", stream, seq, next[min(stream, streams-1)])
		}
		next[min(stream, streams-1)]++
		got.Add(1)
	}}))

	accepted := make([]uint64, streams)
	var wg sync.WaitGroup
	for j := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := uint64(j)
			buf := make([]byte, 1000)
			for seq := uint64(0); ; seq++ {
				b := buf[:16+seq%900]
				fillBody(b, stream, seq)
				start := time.Now()
				err := boxes[0].Send(1, 1, b)
				if err == nil {
					accepted[j]++
					continue
				}
				took := time.Since(start)
				var rf *mailbox.RingFullError
				if assert.ErrorAs(t, err, &rf) {
					assert.ErrorIs(t, err, mailbox.ErrRingFull)
					assert.Equal(t, 1, rf.Peer)
					assert.GreaterOrEqual(t, took, timeout, "send gave up before the timeout")
					assert.GreaterOrEqual(t, rf.Waited, timeout)
				}
				return
			}
		}()
	}
	wg.Wait()
	total := accepted[0] + accepted[1]
	t.Logf("accepted %v frames before the ring was full", accepted)
	require.Greater(t, total, uint64(8))
	st := boxes[0].Stats()
	assert.EqualValues(t, 2, st.RingFull)

	close(gate) // resume
	for got.Load() < int64(total) {
		require.NoError(t, ctx.Err(), "%d of %d accepted frames arrived", got.Load(), total)
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // nothing more may come
	assert.EqualValues(t, total, got.Load())
	mu.Lock()
	require.NoError(t, orderErr)
	assert.Equal(t, accepted, next, "frames per stream")
	mu.Unlock()
	// Credit came back: the ring takes frames again.
	b := make([]byte, 16)
	fillBody(b, 0, accepted[0])
	require.NoError(t, boxes[0].Send(1, 1, b))
}

func TestSendErrors(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10})
	require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}}))
	max := boxes[0].Config().MaxFrame
	assert.Equal(t, 16<<10, max)

	assert.ErrorIs(t, boxes[0].Send(1, 0, nil), mailbox.ErrBadKind)
	assert.ErrorIs(t, boxes[0].Send(2, 1, nil), gin.ErrPeerOutOfRange)
	assert.ErrorIs(t, boxes[0].Send(-1, 1, nil), gin.ErrPeerOutOfRange)
	err := boxes[0].Send(1, 1, make([]byte, max-mailbox.HeaderBytes+1))
	assert.ErrorIs(t, err, mailbox.ErrFrameTooLarge)
	assert.ErrorContains(t, err, fmt.Sprintf("over the %d-byte limit", max))
	assert.NoError(t, boxes[0].Send(1, 1, make([]byte, max-mailbox.HeaderBytes)), "a frame of exactly MaxFrame")
	assert.NoError(t, boxes[0].Send(1, 1, nil), "an empty body")

	require.NoError(t, boxes[0].Close())
	assert.ErrorIs(t, boxes[0].Send(1, 1, nil), mailbox.ErrClosed)
	assert.ErrorIs(t, boxes[0].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}}), mailbox.ErrClosed)
	assert.Error(t, boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}}), "second Start")
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	comms, err := gin.NewLocal(ctx, 1, gin.Config{Signals: 2, Contexts: 1})
	require.NoError(t, err)
	defer comms[0].Close()
	for _, tc := range []struct {
		name string
		cfg  mailbox.Config
		want error
	}{
		{"ring not a power of two", mailbox.Config{RingBytes: 100 << 10}, gin.ErrBadArgument},
		{"ring too small", mailbox.Config{RingBytes: 1 << 10}, gin.ErrBadArgument},
		{"max frame over a quarter ring", mailbox.Config{RingBytes: 64 << 10, MaxFrame: 32 << 10}, gin.ErrBadArgument},
		{"too few signals", mailbox.Config{SignalBase: 1}, gin.ErrUnknownSignal},
		{"unknown context", mailbox.Config{Context: 1}, gin.ErrUnknownContext},
		{"negative timeout", mailbox.Config{SendTimeout: -1}, gin.ErrBadArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mailbox.New(ctx, comms[0], tc.cfg)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// Bad input: bytes that are not a frame are put into rank 2's inbox from
// rank 0 through gin, at the position of rank 0's next frame, with the
// frame signal bumped as a sender would. Rank 2's receive loop must reject
// them with a FrameError naming rank 0, deliver every earlier frame, close
// only that pair (rank 0's next send there fails with ErrPairClosed), and
// go on with the other senders.
func TestCorruptFrameClosesPair(t *testing.T) {
	const good, size = 5, 100
	for _, tc := range []struct {
		name   string
		forge  func(b []byte, seq uint32) int // writes the bad frame, returns its length
		reason string
	}{
		{"garbage", func(b []byte, _ uint32) int {
			for i := range 64 {
				b[i] = 0xAB
			}
			return 64
		}, "magic byte"},
		{"bad checksum", func(b []byte, seq uint32) int {
			mailbox.PutHeader(b, 32, 1, seq)
			b[5]++ // the kind changed after the checksum was taken
			return 32
		}, "checksum"},
		{"body changed", func(b []byte, seq uint32) int {
			mailbox.PutHeader(b, 32, 1, seq)
			b[20]++ // the body changed after the checksum was taken
			return 32
		}, "checksum"},
		{"replayed seq", func(b []byte, seq uint32) int {
			mailbox.PutHeader(b, 32, 1, seq-1)
			return 32
		}, "seq"},
		{"length over the limit", func(b []byte, seq uint32) int {
			mailbox.PutHeader(b, 1<<20, 1, seq)
			return 32
		}, "over the"},
		{"shorter than a header", func(b []byte, seq uint32) int {
			mailbox.PutHeader(b, 8, 1, seq)
			return 16
		}, "shorter than its header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			comms, boxes := local(t, 3, mailbox.Config{RingBytes: 64 << 10})
			ctx := testutils.Deadline(t, 20*time.Second)
			var mu sync.Mutex
			var frames [3][]int // sizes by sender
			var errs []error
			require.NoError(t, boxes[2].Start(mailbox.Handler{
				Frame: func(from int, _ mailbox.Kind, body []byte) {
					mu.Lock()
					frames[from] = append(frames[from], len(body))
					mu.Unlock()
				},
				Error: func(err error) {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				},
			}))
			require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}}))
			body := make([]byte, size)
			for range good {
				require.NoError(t, boxes[0].Send(2, 1, body))
			}

			// Forge the next frame from rank 0: a scratch window holds it.
			scratch := make([]*gin.Window, 3)
			var wg sync.WaitGroup
			for r, c := range comms {
				wg.Add(1)
				go func() { defer wg.Done(); scratch[r], _ = c.RegisterWindow(ctx, 4096, 0) }()
			}
			wg.Wait()
			require.NotNil(t, scratch[0])
			n := tc.forge(scratch[0].Bytes(), good)
			lay := boxes[0].Layout()
			x, err := comms[0].Context(0)
			require.NoError(t, err)
			tail := good * mailbox.FrameBytes(size)
			require.NoError(t, x.Put(comms[0].World(), 2, boxes[0].Window(), lay.InboxOffset(0)+tail,
				scratch[0], 0, n, gin.SignalAdd(lay.FrameSignal(0), 1), gin.LocalNone))

			// The receiver reports it; rank 0's sends to rank 2 then fail
			// (the pair was closed before the report), rank 1's still arrive.
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(errs) > 0
			}, 10*time.Second, time.Millisecond)
			assert.ErrorIs(t, boxes[0].Send(2, 1, body), mailbox.ErrPairClosed)
			require.NoError(t, boxes[1].Send(2, 1, body[:7]))
			require.NoError(t, boxes[0].Send(1, 1, body), "rank 0's other pairs are open")
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(frames[1]) == 1
			}, 10*time.Second, time.Millisecond)

			mu.Lock()
			defer mu.Unlock()
			assert.Len(t, frames[0], good, "frames before the corrupt one")
			require.Len(t, errs, 1)
			var fe *mailbox.FrameError
			require.ErrorAs(t, errs[0], &fe)
			assert.ErrorIs(t, errs[0], mailbox.ErrCorruptFrame)
			assert.Equal(t, 0, fe.From)
			assert.EqualValues(t, tail, fe.Pos)
			assert.EqualValues(t, good, fe.Seq)
			assert.Contains(t, fe.Reason, tc.reason)
			t.Log(errs[0])
			assert.EqualValues(t, 1, boxes[2].Stats().CorruptFrames)
		})
	}
}

// A panic in the handler is reported and the loop goes on.
func TestHandlerPanic(t *testing.T) {
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10})
	got := make(chan string, 2)
	errc := make(chan error, 1)
	require.NoError(t, boxes[1].Start(mailbox.Handler{
		Frame: func(_ int, _ mailbox.Kind, body []byte) {
			if string(body) == "boom" {
				panic("boom")
			}
			got <- string(body)
		},
		Error: func(err error) { errc <- err },
	}))
	require.NoError(t, boxes[0].Send(1, 1, []byte("boom")))
	require.NoError(t, boxes[0].Send(1, 1, []byte("after")))
	assert.Equal(t, "after", <-got)
	assert.ErrorContains(t, <-errc, "panicked")
	assert.EqualValues(t, 1, boxes[1].Stats().HandlerPanics)
}

// A tight loop of sends is a burst: the writer puts many frames per put,
// and every frame still arrives, in order. Frames sent one at a time, with
// pauses, each take a put of their own (the latency path).
func TestBurstsAreBatched(t *testing.T) {
	n := scale(200_000, 20_000)
	// A wide gap, so that sends slowed by the race detector still make a
	// burst and the writer runs under it too.
	_, boxes := local(t, 2, mailbox.Config{RingBytes: 64 << 10, BatchGap: 100 * time.Microsecond})
	ctx := testutils.Deadline(t, time.Minute)
	var next, got atomic.Uint64
	var orderErr atomic.Pointer[string]
	require.NoError(t, boxes[1].Start(mailbox.Handler{Frame: func(_ int, _ mailbox.Kind, body []byte) {
		if _, seq, _ := streamOf(body); seq != next.Load() {
			msg := fmt.Sprintf("message %d arrived, want %d", seq, next.Load())
			orderErr.CompareAndSwap(nil, &msg)
		}
		next.Add(1)
		got.Add(1)
	}}))
	b := make([]byte, 16)
	for seq := range uint64(n) {
		fillBody(b, 0, seq)
		require.NoError(t, boxes[0].Send(1, 1, b))
	}
	for got.Load() < uint64(n) {
		require.NoError(t, ctx.Err(), "%d of %d frames arrived", got.Load(), n)
		time.Sleep(time.Millisecond)
	}
	require.Nil(t, orderErr.Load())
	st := boxes[0].Stats()
	t.Logf("%d frames in %d puts", st.FramesSent, st.Puts)
	assert.Less(t, st.Puts, st.FramesSent/2, "a burst should be batched")

	// The writer may still be finishing the burst's last put (its frames
	// arrived before it counted the put): wait for it before counting.
	require.NoError(t, boxes[0].Flush(ctx))
	before := boxes[0].Stats().Puts
	for seq := uint64(n); seq < uint64(n)+10; seq++ {
		time.Sleep(2 * time.Millisecond)
		fillBody(b, 0, seq)
		require.NoError(t, boxes[0].Send(1, 1, b))
	}
	assert.EqualValues(t, 10, boxes[0].Stats().Puts-before, "paced frames are put one by one")
}

// Ranks that disagree on the ring geometry fail together, at New.
func TestConfigMismatch(t *testing.T) {
	ctx := context.Background()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: 4})
	require.NoError(t, err)
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[r] = mailbox.New(ctx, comms[r], mailbox.Config{RingBytes: 64 << 10, MaxFrame: 1024 * (r + 1)})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		assert.ErrorIs(t, err, gin.ErrBadArgument, "rank %d", r)
	}
}

// A burst's writer shares the sender's processor under GOMAXPROCS 1: the
// sender yields to it every sixteenth of the ring, so the receiver gets
// frames while the sender goes on staging, not only once the ring is full.
func TestBurstYieldsToTheWriter(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const ring = 64 << 10
	_, boxes := local(t, 2, mailbox.Config{RingBytes: ring, BatchGap: 100 * time.Microsecond})
	b := make([]byte, 16)
	var seq uint64
	for ; boxes[0].Stats().BytesSent < ring/2; seq++ { // no credit wait: the receiver is not started
		fillBody(b, 0, seq)
		require.NoError(t, boxes[0].Send(1, 1, b))
	}
	st := boxes[0].Stats()
	t.Logf("%d frames staged, %d puts before the sender stopped", st.FramesSent, st.Puts)
	// Four sends put inline before the burst starts; then a put at least
	// every ring/16 bytes staged.
	assert.GreaterOrEqual(t, st.Puts, uint64(4+4), "the writer did not run while the sender staged half the ring")
}
