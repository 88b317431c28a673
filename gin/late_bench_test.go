package gin_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
)

// BenchmarkLateSignal is the cost of a wait whose signal comes late: rank
// 0 waits (WaitSignal) for a signal that rank 1 sends lateBy after the
// wait began, as a rank waits for a slow peer in a barrier or for credit
// from a busy receiver. It reports the process's CPU time per wait
// (cpu-µs/wait: what the waiter burns while it polls, then blocks, plus
// the put and the wake-up) and how long after the signal the wait
// returned (wake-µs). Ranks are goroutines of this process, over shm and,
// built with -tags ofi, over ofi (RDMACTOR_OFI_PROVIDER picks the fabric);
// gin.EnvTransport picks one.
func BenchmarkLateSignal(b *testing.B) {
	for _, tr := range ginlocal.Transports() {
		b.Run("transport="+tr, func(b *testing.B) {
			for _, late := range []time.Duration{200 * time.Microsecond, 2 * time.Millisecond} {
				b.Run("late="+late.String(), func(b *testing.B) { lateSignal(b, tr, late) })
			}
		})
	}
}

func lateSignal(b *testing.B, transport string, lateBy time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Transport: transport, Signals: 1})
	var unsup *gin.UnsupportedError
	if errors.As(err, &unsup) {
		b.Skipf("transport %s: %v", transport, err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	x0, err := comms[0].Context(0)
	if err != nil {
		b.Fatal(err)
	}
	x1, err := comms[1].Context(0)
	if err != nil {
		b.Fatal(err)
	}
	team := comms[1].World()
	sent := make(chan time.Time, 1)
	var cpu, wake time.Duration
	b.ResetTimer()
	for i := range b.N {
		go func() {
			time.Sleep(lateBy)
			t := time.Now()
			if err := x1.Signal(team, 0, gin.SignalInc(0)); err != nil {
				panic(err)
			}
			sent <- t
		}()
		c0 := testutils.ProcessCPU()
		if _, err := x0.WaitSignal(ctx, 0, uint64(i+1), 64); err != nil {
			b.Fatal(err)
		}
		done := time.Now()
		cpu += testutils.ProcessCPU() - c0
		wake += done.Sub(<-sent)
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/wait")
	b.ReportMetric(float64(wake.Microseconds())/float64(b.N), "wake-µs")
}
