// Package conformance is the semantics suite every gin provider must pass:
// one subtest per sentence of gin's contract (gin/doc.go and the doc
// comments of the calls), each citing the sentence and the NCCL source it
// comes from. It is a plain package, not a _test file, so every provider
// (shm, ofi, gpu) runs the same suite rather than a copy:
//
//	func TestShm(t *testing.T) {
//		conformance.Run(t, func(t *testing.T, n int, cfg gin.Config) []*gin.Comm {
//			cfg.Transport = "shm"
//			comms, err := gin.NewLocal(context.Background(), n, cfg)
//			require.NoError(t, err)
//			return comms
//		})
//	}
//
// Every wait in the suite runs under a deadline (Timeout), every rank runs
// in its own goroutine, and iteration counts shrink under the race
// detector and with -short.
package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/stretchr/testify/require"
)

// Factory builds the n ranks' Comms of one subtest, all in this process
// (gin.NewLocal, say), with cfg; it fails t if it cannot. The suite closes
// the Comms when the subtest ends.
//
// The subtests that check creation failures (Config.Require, LSASize)
// call gin.NewLocal themselves with Config.Transport set to the
// Comm.Transport() of a Comm the factory built, since they need the error
// the factory would fail on.
type Factory func(t *testing.T, n int, cfg gin.Config) []*gin.Comm

// Timeout bounds every wait of the suite.
const Timeout = 20 * time.Second

// Run runs the whole suite against the provider f builds Comms on.
func Run(t *testing.T, f Factory) {
	// Every WQE gin builds goes through rdma.CheckWQE before the provider
	// sees it (rdma.Checked): providers trust gin's validation, and this
	// proves it holds. Children of multi-process tests inherit it.
	t.Setenv(rdma.EnvCheckWQEs, "1")
	t.Run("Ordering", func(t *testing.T) { testOrdering(t, f) })
	t.Run("Rolling", func(t *testing.T) { testRolling(t, f) })
	t.Run("Counters", func(t *testing.T) { testCounters(t, f) })
	t.Run("Flush", func(t *testing.T) { testFlush(t, f) })
	t.Run("FlushAsync", func(t *testing.T) { testFlushAsync(t, f) })
	t.Run("PutValue", func(t *testing.T) { testPutValue(t, f) })
	t.Run("Get", func(t *testing.T) { testGet(t, f) })
	t.Run("Aggregate", func(t *testing.T) { testAggregate(t, f) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, f) })
	t.Run("VASignals", func(t *testing.T) { testVASignals(t, f) })
	t.Run("Shadows", func(t *testing.T) { testShadows(t, f) })
	t.Run("Teams", func(t *testing.T) { testTeams(t, f) })
	t.Run("Contexts", func(t *testing.T) { testContexts(t, f) })
	t.Run("Waits", func(t *testing.T) { testWaits(t, f) })
	t.Run("WaitSignals", func(t *testing.T) { testWaitSignals(t, f) })
	t.Run("CloseRace", func(t *testing.T) { testCloseRace(t, f) })
	t.Run("Loopback", func(t *testing.T) { testLoopback(t, f) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, f) })
	t.Run("WindowClose", func(t *testing.T) { testWindowClose(t, f) })
}

// scale picks an iteration count: n normally, small under the race
// detector or -short.
func scale(n, small int) int {
	if raceEnabled || testing.Short() {
		return small
	}
	return n
}

// env is one subtest's ranks.
type env struct {
	t     *testing.T
	f     Factory
	comms []*gin.Comm
	ctx   context.Context // ends after Timeout
}

// setup builds n ranks with cfg and closes them when t ends.
func setup(t *testing.T, f Factory, n int, cfg gin.Config) *env {
	t.Helper()
	comms := f(t, n, cfg)
	require.Len(t, comms, n, "factory returned the wrong number of comms")
	t.Cleanup(func() {
		for r, c := range comms {
			if err := c.Close(); err != nil {
				t.Errorf("close rank %d: %v", r, err)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return &env{t: t, f: f, comms: comms, ctx: ctx}
}

// x returns rank r's context i.
func (e *env) x(r, i int) *gin.Context {
	e.t.Helper()
	x, err := e.comms[r].Context(i)
	require.NoError(e.t, err)
	return x
}

// windows registers size bytes with flags on every rank (collective).
func (e *env) windows(size int, flags gin.WindowFlags) []*gin.Window {
	e.t.Helper()
	ws := make([]*gin.Window, len(e.comms))
	e.ranks(func(r int) error {
		var err error
		ws[r], err = e.comms[r].RegisterWindow(e.ctx, size, flags)
		return err
	})
	return ws
}

// ranks runs fn for every rank, each in its own goroutine, and fails the
// test with every rank's error.
func (e *env) ranks(fn func(r int) error) {
	e.t.Helper()
	parallel(e.t, len(e.comms), "rank", fn)
}

// parallel runs fn(0..n-1) in n goroutines and fails t with their errors.
func parallel(t *testing.T, n int, what string, fn func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("panic: %v", p)
				}
			}()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "%s %d", what, i)
	}
}

// awaitSignal polls rank r's signal s (context 0) until its 64-bit value is
// want, with the env's deadline: a wait that trusts nothing but
// ReadSignal, for tests of WaitSignal itself.
func (e *env) awaitSignal(r int, s gin.Signal, want uint64) {
	e.t.Helper()
	x := e.x(r, 0)
	for {
		v, err := x.ReadSignal(s, 64)
		require.NoError(e.t, err)
		if v == want {
			return
		}
		if e.ctx.Err() != nil {
			require.FailNow(e.t, "signal never reached its value", "rank %d signal %d: at %d, want %d", r, s, v, want)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// fence makes every earlier post of rank from's context 0 to rank to
// visible at to: a SignalInc on signal s (strong signals) that to waits for.
// s must be used only by SignalInc.
func (e *env) fence(from, to int, s gin.Signal) {
	e.t.Helper()
	cur, err := e.x(to, 0).ReadSignal(s, 64)
	require.NoError(e.t, err)
	require.NoError(e.t, e.x(from, 0).Signal(e.comms[from].World(), to, gin.SignalInc(s)))
	_, err = e.x(to, 0).WaitSignal(e.ctx, s, cur+1, 64)
	require.NoError(e.t, err)
}

// newLocal builds comms with gin.NewLocal on the provider f uses, for the
// subtests that check creation errors.
func newLocal(t *testing.T, f Factory, n int, cfg gin.Config) ([]*gin.Comm, error) {
	t.Helper()
	probe := setup(t, f, 1, gin.Config{})
	cfg.Transport = probe.comms[0].Transport()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	comms, err := gin.NewLocal(ctx, n, cfg)
	if err == nil {
		t.Cleanup(func() {
			for _, c := range comms {
				c.Close()
			}
		})
	}
	return comms, err
}

// fill writes the pattern of seed into b: a splitmix64 stream, so puts with
// different seeds differ in (nearly) every byte.
func fill(b []byte, seed uint64) {
	x := seed*0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019
	for i := 0; i < len(b); i += 8 {
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(z >> (8 * j))
		}
	}
}

// checkFill reports where b differs from the pattern of seed.
func checkFill(b []byte, seed uint64) error {
	want := make([]byte, len(b))
	fill(want, seed)
	for i := range b {
		if b[i] != want[i] {
			return fmt.Errorf("byte %d of %d: got %#02x, want %#02x (pattern %d)", i, len(b), b[i], want[i], seed)
		}
	}
	return nil
}

// zero reports the first non-zero byte of b.
func zero(b []byte) error {
	for i, c := range b {
		if c != 0 {
			return fmt.Errorf("byte %d is %#02x, want 0 (nothing written)", i, c)
		}
	}
	return nil
}

// is returns nil if errors.Is(err, target), else an error saying so.
func is(err, target error, what string) error {
	if errors.Is(err, target) {
		return nil
	}
	return fmt.Errorf("%s: got error %v, want %v", what, err, target)
}
