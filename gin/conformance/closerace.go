package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

// testCloseRace: gin/comm.go, Close: "Calls after Close return
// ErrClosed." Close may come at any moment: every call racing it (put,
// put value, signal, flush, waits) returns nil or ErrClosed within a
// second, with no panic, and Close itself returns within a second. Four
// goroutines per kind of call post to the peer while rank 0 closes. It
// runs in a child process: a fault on unmapped memory would kill the
// suite.
func testCloseRace(t *testing.T, f Factory) {
	inSubprocessFor(t, 5*time.Minute, func(t *testing.T) {
		reps := scale(200, 20)
		for rep := range reps {
			// A subtest per repetition, so its Comms are released before
			// the next starts.
			t.Run(fmt.Sprint(rep), func(t *testing.T) {
				closeRaceOnce(t, f, time.Duration(rep%5)*time.Millisecond)
			})
		}
	})
}

func closeRaceOnce(t *testing.T, f Factory, after time.Duration) {
	e := setup(t, f, 2, gin.Config{Signals: 4, Counters: 2})
	w := e.windows(1<<16, 0)
	c := e.comms[0]
	x := e.x(0, 0)
	world := c.World()
	kinds := map[string]func(i int) error{
		"Put": func(i int) error {
			return x.Put(world, 1, w[0], 64*i, w[0], 0, 64, gin.SignalInc(0), gin.CounterInc(0))
		},
		"PutValue": func(i int) error { return x.PutValue(world, 1, w[0], 8*i, uint64(i), 8, gin.SignalInc(1)) },
		"Signal":   func(int) error { return x.Signal(world, 1, gin.SignalInc(2)) },
		"Flush":    func(int) error { return x.Flush(context.Background()) },
		"WaitSignal": func(int) error {
			_, err := x.WaitSignal(context.Background(), 3, 1, 64)
			return err
		},
		"WaitSignals": func(int) error {
			_, _, err := x.WaitSignals(context.Background(), []gin.SignalWait{{Signal: 3, Least: 1}}, 64)
			return err
		},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	stop := make(chan struct{})
	var closedAt time.Time
	var mu sync.Mutex
	running := map[string]int{}
	for name, call := range kinds {
		for g := range 4 {
			wg.Add(1)
			mu.Lock()
			running[name]++
			mu.Unlock()
			go func() {
				defer wg.Done()
				defer func() { mu.Lock(); running[name]--; mu.Unlock() }()
				defer func() {
					if p := recover(); p != nil {
						errs <- fmt.Errorf("%s panicked racing Close: %v", name, p)
					}
				}()
				for i := 0; ; i++ {
					err := call((g*97 + i) % 64)
					if err != nil {
						mu.Lock()
						at := closedAt
						mu.Unlock()
						if !errors.Is(err, gin.ErrClosed) {
							errs <- fmt.Errorf("%s racing Close: %w, want nil or ErrClosed", name, err)
						} else if !at.IsZero() && time.Since(at) > time.Second {
							errs <- fmt.Errorf("%s returned ErrClosed %v after Close", name, time.Since(at))
						}
						return
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
	}
	time.Sleep(after)
	mu.Lock()
	closedAt = time.Now()
	mu.Unlock()
	start := time.Now()
	require.NoError(t, c.Close())
	require.Less(t, time.Since(start), time.Second, "Close took too long")
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("calls racing Close still running 5 s after it: %v", running)
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
