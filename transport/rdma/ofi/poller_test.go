//go:build ofi && cgo && linux

package ofi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// capture is the ofi provider registered as capName: it records the
// providers gin opens through it, by rank, so a test can reach them.
const capName = "ofi-captured"

var captured struct {
	sync.Mutex
	provs map[int]*ofi.Provider
}

func init() {
	rdma.Register(capName, func(cfg rdma.Config) (rdma.Provider, error) {
		p, err := ofi.Open(cfg)
		if err != nil {
			return nil, err
		}
		captured.Lock()
		captured.provs[cfg.Rank] = p.(*ofi.Provider)
		captured.Unlock()
		return p, nil
	})
}

// capturedComms opens two goroutine-rank Comms on prov and returns them
// with their providers.
func capturedComms(t *testing.T, prov string) ([]*gin.Comm, []*ofi.Provider) {
	t.Helper()
	t.Setenv(ofi.EnvProvider, prov)
	skipIfNoProvider(t, prov)
	captured.Lock()
	captured.provs = map[int]*ofi.Provider{}
	captured.Unlock()
	comms, err := gin.NewLocal(context.Background(), 2, gin.Config{Transport: capName, Signals: 2})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	captured.Lock()
	defer captured.Unlock()
	return comms, []*ofi.Provider{captured.provs[0], captured.provs[1]}
}

// TestProviderIsPoller: the ofi provider offers rdma.Poller, which gin's
// and the endpoint's waits look for (transport/rdma/poller.go).
func TestProviderIsPoller(t *testing.T) {
	t.Setenv(ofi.EnvProvider, "tcp")
	skipIfNoProvider(t, "tcp")
	p, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "poller"})
	require.NoError(t, err)
	defer p.Close()
	_, ok := p.(rdma.Poller)
	require.True(t, ok, "*ofi.Provider must implement rdma.Poller")
}

// heldComms opens two captured Comms on prov, each with a 4 KiB window, and
// holds both progress goroutines back (HoldProgress), so only callers read
// the CQs. ctx is the test's hang guard (30 s); release ends the holds
// (cleanup does too, before the Comms close).
func heldComms(t *testing.T, prov string) (ctx context.Context, comms []*gin.Comm, ws []*gin.Window, release func()) {
	t.Helper()
	comms, provs := capturedComms(t, prov)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	ws, err := registerAll(ctx, comms, 4096, 0)
	require.NoError(t, err)
	var releases []func()
	for _, p := range provs {
		releases = append(releases, ofi.HoldProgress(p))
	}
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	t.Cleanup(release)
	return ctx, comms, ws, release
}

// TestWaitDrivesProvider: with both ranks' progress goroutines held back,
// nothing reads the CQs but the callers, and on tcp;ofi_rxm and sockets
// (manual progress) a write lands and a signal is applied only when the
// target reads its CQ (on sockets a write also moves only while its
// initiator does, beyond the one pass its post drives). A ping-pong of
// signalled puts (with the mode queries of first use) still completes:
// gin's WaitSignal, the endpoint's waits and the mode query drive the
// provider through rdma.Poller. Without that the first wait ends with its
// deadline.
//
// Rank 1's last put completes only while rank 1 polls, so rank 1 ends in
// a wait for rank 0's "done" signal; the holds are released once rank 0 is
// done, and only rank 0's rounds are the test.
func TestWaitDrivesProvider(t *testing.T) {
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			ctx, comms, ws, release := heldComms(t, prov)
			const rounds = 50
			errs := [2]chan error{make(chan error, 1), make(chan error, 1)}
			for r := range 2 {
				go func() {
					errs[r] <- func() error {
						x, _ := comms[r].Context(0)
						w, peer := comms[r].World(), 1-r
						src := ws[r].Bytes()
						// The peer's put of round i is checked as soon as its
						// signal is seen: once this rank's own put of round i
						// has left (at post, on tcp and sockets), the peer's
						// put of round i+1 may land over it at any poll.
						wait := func(i uint64) error {
							if _, err := x.WaitSignal(ctx, 0, i, 64); err != nil {
								return err
							}
							if got := ws[r].Bytes()[8]; got != byte(i) {
								return fmt.Errorf("round %d: signal seen, put data %d", i, got)
							}
							return nil
						}
						for i := uint64(1); i <= rounds; i++ {
							if r == 1 {
								if err := wait(i); err != nil {
									return err
								}
							}
							src[0] = byte(i)
							if err := x.Put(w, peer, ws[r], 8, ws[r], 0, 1, gin.SignalInc(0), gin.LocalNone); err != nil {
								return err
							}
							if r == 0 {
								if err := wait(i); err != nil {
									return err
								}
							}
						}
						if r == 0 {
							return x.Signal(w, peer, gin.SignalInc(1))
						}
						_, err := x.WaitSignal(ctx, 1, 1, 64)
						return err
					}()
				}()
			}
			require.NoError(t, <-errs[0], "rank 0, progress held")
			release()
			require.NoError(t, <-errs[1], "rank 1")
		})
	}
}

// TestPostLeavesUnpolled: a put whose initiator never reads its CQ again
// (no wait, no Flush, its progress goroutine held back) still reaches a
// target that polls. tcp sends inside fi_writemsg; sockets only queues
// the write, and the provider drives it once after the post
// (quirks.progressAtPost): without that, a signal posted just before its
// caller turned to other work waited for the progress goroutine (up to
// pollerQuietMax), and here, held, for ever. One round trip first sets up
// the connection and the signal's mode, which need rank 0 to poll.
func TestPostLeavesUnpolled(t *testing.T) {
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			ctx, comms, ws, _ := heldComms(t, prov)
			xs := [2]*gin.Context{}
			for r := range xs {
				xs[r], _ = comms[r].Context(0)
			}
			w := comms[0].World() // rank 0's: a Team is its caller's view
			errs := make(chan error, 1)
			go func() { // rank 1: answer one put, then wait for the next
				if _, err := xs[1].WaitSignal(ctx, 0, 1, 64); err != nil {
					errs <- err
					return
				}
				if err := xs[1].Signal(comms[1].World(), 0, gin.SignalInc(0)); err != nil {
					errs <- err
					return
				}
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				defer wcancel()
				_, err := xs[1].WaitSignal(wctx, 0, 2, 64)
				errs <- err
			}()
			require.NoError(t, xs[0].Put(w, 1, ws[0], 0, ws[0], 64, 8, gin.SignalInc(0), gin.LocalNone))
			_, err := xs[0].WaitSignal(ctx, 0, 1, 64)
			require.NoError(t, err)
			ws[0].Bytes()[64] = 42
			require.NoError(t, xs[0].Put(w, 1, ws[0], 0, ws[0], 64, 8, gin.SignalInc(0), gin.LocalNone))
			require.NoError(t, <-errs, "rank 1's wait for a put rank 0 posted and never polled for")
			require.Equal(t, byte(42), ws[1].Bytes()[0])
		})
	}
}

// TestProgressAfterPosts: a stream of large puts whose initiator then
// neither waits nor flushes still lands. On sockets a write moves only
// while its initiator reads its CQ, and one pass per post (push) does not
// send 1 MiB: the rest is the progress goroutine's, which stands back
// while posts come and must take over after the last one. A first put
// and its answer set up the connection and the signal's mode (the mode
// query's wait would drive the stream's writes out).
func TestProgressAfterPosts(t *testing.T) {
	const size, puts = 1 << 20, 16
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			comms, _ := capturedComms(t, prov)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ws, err := registerAll(ctx, comms, size*puts, 0)
			require.NoError(t, err)
			x0, _ := comms[0].Context(0)
			x1, _ := comms[1].Context(0)
			w0, w1 := comms[0].World(), comms[1].World()
			require.NoError(t, x0.Put(w0, 1, ws[0], 0, ws[0], 0, 8, gin.SignalInc(0), gin.LocalNone))
			_, err = x1.WaitSignal(ctx, 0, 1, 64)
			require.NoError(t, err)
			require.NoError(t, x1.Signal(w1, 0, gin.SignalInc(0)))
			_, err = x0.WaitSignal(ctx, 0, 1, 64)
			require.NoError(t, err)
			src := ws[0].Bytes()
			for i := range src {
				src[i] = byte(i*7 + i>>12)
			}
			for i := range puts {
				sig := gin.None
				if i == puts-1 {
					sig = gin.SignalInc(0)
				}
				require.NoError(t, x0.Put(w0, 1, ws[0], i*size, ws[0], i*size, size, sig, gin.LocalNone))
			}
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			defer wcancel()
			_, err = x1.WaitSignal(wctx, 0, 2, 64)
			require.NoError(t, err, "rank 1's wait for a stream whose initiator went idle")
			require.Equal(t, src, ws[1].Bytes())
		})
	}
}

// TestPollWaitEnds: a WaitSignal that has spun past its polls and loops
// in PollWait (no signal will come) ends with ctx's error when ctx is
// cancelled and with gin.ErrClosed when its Comm closes: the loop looks at
// both between PollWait calls (gin/signal.go, wait).
func TestPollWaitEnds(t *testing.T) {
	for _, prov := range providers {
		for _, how := range []string{"cancel", "close"} {
			t.Run(prov+"/"+how, func(t *testing.T) {
				comms, provs := capturedComms(t, prov)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				x, _ := comms[0].Context(0)
				start := ofi.PollWaits(provs[0])
				done := make(chan error, 1)
				go func() {
					_, err := x.WaitSignal(ctx, 1, 1, 64)
					done <- err
				}()
				// Past its spin and yield phases the waiter loops in
				// PollWait.
				for ofi.PollWaits(provs[0])-start < 2 {
					select {
					case err := <-done:
						t.Fatalf("wait ended before it was ended: %v", err)
					default:
						time.Sleep(100 * time.Microsecond)
					}
				}
				want := context.Canceled
				if how == "cancel" {
					cancel()
				} else {
					want = gin.ErrClosed
					go comms[0].Close()
				}
				select {
				case err := <-done:
					require.ErrorIs(t, err, want)
				case <-time.After(30 * time.Second): // a hang guard, not a timing
					t.Fatal("wait did not end")
				}
			})
		}
	}
}
