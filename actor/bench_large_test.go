package actor_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
)

// BenchmarkLargeMessage is the bandwidth of large one-way messages from a
// goroutine of rank 0 (Node.Tell) to an actor of rank 1 that receives them
// whole, against plain gin puts of the same bytes between the same ranks
// on the same Comm: "put" is Context.Put of size bytes from a registered
// window of rank 0 into one of rank 1 with SignalInc, and rank 1 waiting
// for the signal. The two alternate in rounds of window messages each,
// so a shared machine's noise falls on both; the benchmark reports MB/s
// (1e6 bytes/s) of each and actor/put, the ratio. b.N counts rounds.
//
// Ranks are goroutines of this process (actor.StartLocal) over shm, and
// over ofi when built with -tags ofi (RDMACTOR_OFI_PROVIDER picks the
// fabric, e.g. tcp); without the tag the ofi case is skipped.
func BenchmarkLargeMessage(b *testing.B) {
	for _, tr := range ginlocal.Transports() {
		b.Run("transport="+tr, func(b *testing.B) {
			for _, size := range []int{8 << 20, 64 << 20} {
				b.Run(fmt.Sprintf("size=%dMiB", size>>20), func(b *testing.B) { largeMessages(b, tr, size) })
			}
		})
	}
}

// largeWindow is the bytes a round of largeMessages moves by each path:
// several messages per round for the smaller sizes, so that a round
// measures a stream, not one message's latency.
const largeWindow = 32 << 20

func largeMessages(b *testing.B, transport string, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	nodes, err := actor.StartLocal(ctx, 2, actor.Config{Gin: gin.Config{Transport: transport}, MaxMessage: 2 * size})
	var unsup *gin.UnsupportedError
	if errors.As(err, &unsup) {
		b.Skipf("transport %s: %v", transport, err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	window := max(1, largeWindow/size)

	// The put path: a window of size bytes on each rank, and a signal the
	// mailbox does not use.
	wins := ginlocal.Windows(b, ctx, []*gin.Comm{nodes[0].Comm(), nodes[1].Comm()}, size)
	sig := gin.Signal(nodes[0].Comm().Signals() - 1)
	x0, err := nodes[0].Comm().Context(0)
	if err != nil {
		b.Fatal(err)
	}
	x1, err := nodes[1].Comm().Context(0)
	if err != nil {
		b.Fatal(err)
	}
	src := wins[0].Bytes()
	for i := range src {
		src[i] = byte(i)
	}
	team := nodes[0].Comm().World()
	puts := uint64(0)
	putRound := func() {
		for range window {
			if err := x0.Put(team, 1, wins[0], 0, wins[0], 0, size, gin.SignalInc(sig), gin.LocalNone); err != nil {
				b.Fatal(err)
			}
		}
		puts += uint64(window)
		if _, err := x1.WaitSignal(ctx, sig, puts, 64); err != nil {
			b.Fatal(err)
		}
	}

	// The actor path: a sink on rank 1 that tells a channel of each
	// message's arrival.
	arrived := make(chan int, 64)
	if _, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*blob); ok {
			arrived <- len(m.Data)
		}
	}), "sink"); err != nil {
		b.Fatal(err)
	}
	target := nodes[0].PID(1, "sink")
	msg := &blob{Data: make([]byte, size)}
	copy(msg.Data, src)
	actorRound := func() {
		for range window {
			if err := nodes[0].Tell(target, msg); err != nil {
				b.Fatal(err)
			}
		}
		for range window {
			select {
			case n := <-arrived:
				if n != size {
					b.Fatalf("a message of %d bytes arrived, want %d", n, size)
				}
			case <-ctx.Done():
				b.Fatal("messages lost")
			}
		}
	}

	putRound() // warm up both paths: endpoints, pages, buffers
	actorRound()
	var putTime, actorTime, putCPU, actorCPU time.Duration
	b.SetBytes(int64(size * window))
	b.ResetTimer()
	for b.Loop() {
		t0, c0 := time.Now(), testutils.ProcessCPU()
		putRound()
		t1, c1 := time.Now(), testutils.ProcessCPU()
		actorRound()
		putTime += t1.Sub(t0)
		actorTime += time.Since(t1)
		putCPU += c1 - c0
		actorCPU += testutils.ProcessCPU() - c1
	}
	bytes := float64(b.N * window * size)
	putMBs, actorMBs := bytes/putTime.Seconds()/1e6, bytes/actorTime.Seconds()/1e6
	b.ReportMetric(putMBs, "put-MB/s")
	b.ReportMetric(actorMBs, "actor-MB/s")
	b.ReportMetric(actorMBs/putMBs, "actor/put")
	// CPU time per MiB, of every thread of the process: steadier than
	// wall time on a shared machine.
	mib := bytes / (1 << 20)
	b.ReportMetric(float64(putCPU.Microseconds())/mib, "put-cpu-µs/MiB")
	b.ReportMetric(float64(actorCPU.Microseconds())/mib, "actor-cpu-µs/MiB")
	// How often the sender waited for credit: each wait is a hand-off
	// between threads, which a loaded machine makes slow.
	b.ReportMetric(float64(nodes[0].Mailbox().Stats().CreditWaits)/float64((b.N+1)*window), "creditwaits/msg")
}
