package mailbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ranks in these tests are processes started through the launcher: the
// test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("fanin", roleFanIn)
	testutils.Role("lost", roleLost)
	testutils.MainWithRoles(m)
}

// envMessages carries the message count from the test to its ranks (the
// ranks cannot call testing.Short).
const envMessages = "MAILBOX_TEST_MESSAGES"

// One sender process, 10^6 messages of 8 B to 64 KiB (10^4 under -race or
// -short) through a 512 KiB ring: in order, each once, intact.
func TestProcessesMillionMessages(t *testing.T) {
	n := scale(1_000_000, 10_000)
	testutils.RunRanks(t, 2, "fanin", envMessages+"="+strconv.Itoa(n))
}

// Many senders into one receiver: three sender processes, two goroutines
// each, into rank 0.
func TestProcessesManySendersOneReceiver(t *testing.T) {
	n := scale(300_000, 6_000)
	testutils.RunRanks(t, 4, "fanin", envMessages+"="+strconv.Itoa(n))
}

// roleFanIn: every rank but 0 sends its share of MAILBOX_TEST_MESSAGES to
// rank 0 from two goroutines (streams); rank 0 checks order, completeness
// and content per stream and prints the rate.
func roleFanIn() error {
	const streams = 2
	total, err := strconv.Atoi(os.Getenv(envMessages))
	if err != nil {
		return fmt.Errorf("%s: %w", envMessages, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Second)
	defer cancel()
	size := 0
	c, err := gin.Init(ctx, gin.Config{Signals: 64})
	if err != nil {
		return err
	}
	defer c.Close()
	size = c.Size()
	m, err := mailbox.New(ctx, c, mailbox.Config{RingBytes: 512 << 10})
	if err != nil {
		return err
	}
	defer m.Close()
	senders := size - 1
	perStream := total / senders / streams
	want := senders * streams * perStream

	if c.Rank() == 0 {
		k := newTracker(streams)
		done := make(chan struct{})
		var loopErr error
		start := time.Now()
		err := m.Start(mailbox.Handler{
			Frame: func(from int, _ mailbox.Kind, body []byte) {
				k.frame(from, body)
				if k.total == want {
					close(done)
				}
			},
			Error: func(err error) { loopErr = err },
		})
		if err != nil {
			return err
		}
		if err := c.Barrier(ctx); err != nil {
			return err
		}
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d messages arrived (loop error: %v)", k.total, want, loopErr)
		}
		took := time.Since(start)
		if k.err != nil {
			return k.err
		}
		st := m.Stats()
		laps := st.BytesReceived / (512 << 10)
		fmt.Printf("rank 0: %d messages, %d MB from %d senders in %v (%.2f M msg/s), ring wrapped about %d times per sender; credits returned %d\n",
			st.FramesReceived, st.BytesReceived>>20, senders, took.Round(time.Millisecond),
			float64(st.FramesReceived)/took.Seconds()/1e6, laps/uint64(senders), st.CreditsReturned)
		if int(st.FramesReceived) != want {
			return fmt.Errorf("stats: %d frames received, want %d", st.FramesReceived, want)
		}
		return c.Barrier(ctx)
	}

	if err := m.Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) {}}); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	errs := make([]error, streams)
	var wg sync.WaitGroup
	for j := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := uint64(c.Rank()*streams + j)
			buf := make([]byte, 64<<10)
			for seq := range uint64(perStream) {
				b := buf[:bodySize(stream, seq)]
				fillBody(b, stream, seq)
				if err := m.Send(0, 1, b); err != nil {
					errs[j] = fmt.Errorf("stream %d: send %d: %w", stream, seq, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

// A killed rank: the other ranks' receive loops end with ErrPeerLost and
// sends fail with it, within seconds.
func TestProcessesLostRank(t *testing.T) {
	res := testutils.RunRanksOpts(t, launch.Options{NP: 3, Cleanup: shm.Cleanup}, "lost")
	require.Len(t, res, 3)
	for _, r := range res {
		want := 0
		if r.Rank == 2 {
			want = 3
		}
		assert.Equal(t, want, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
	}
}

func roleLost() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := gin.Init(ctx, gin.Config{Signals: 8})
	if err != nil {
		return err
	}
	m, err := mailbox.New(ctx, c, mailbox.Config{RingBytes: 64 << 10})
	if err != nil {
		return err
	}
	lost := make(chan error, 1)
	if err := m.Start(mailbox.Handler{
		Frame: func(int, mailbox.Kind, []byte) {},
		Error: func(err error) { lost <- err },
	}); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 2 {
		os.Exit(3) // no Close, no goodbye: as if killed
	}
	start := time.Now()
	select {
	case err := <-lost:
		if !errors.Is(err, gin.ErrPeerLost) {
			return fmt.Errorf("receive loop ended with %v, want ErrPeerLost", err)
		}
		fmt.Printf("rank %d: loop ended after %v: %v\n", c.Rank(), time.Since(start).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		return errors.New("the loss was not noticed within 20 s")
	}
	if err := m.Send(2, 1, []byte("late")); !errors.Is(err, gin.ErrPeerLost) {
		return fmt.Errorf("send to the dead rank: %v, want ErrPeerLost", err)
	}
	<-m.Done()
	return errors.Join(m.Close(), c.Close())
}
