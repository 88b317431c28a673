package gin_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/memword"
)

// The benchmarks run two ranks as goroutines of this process (gin.NewLocal
// over shm: each rank maps the other's window files). Each put benchmark
// has a baseline sub-benchmark, "copy", that does what a shm put must do
// at least, with no gin: a Go copy of the same size into the peer's
// mapping and an atomic add on a word of it, so the ratio put/copy is the
// cost of the gin, endpoint and provider layers (NATS ipqueue_test.go's
// "WithoutX"/"WithX" pairs). cmd/rdmabench measures the same between two
// processes, against the Open MPI anchor.

// benchSizes are the put sizes: 8 B, 4 KiB, 64 KiB, 1 MiB.
var benchSizes = []int{8, 4 << 10, 64 << 10, 1 << 20}

// benchPair is rank 0 and rank 1 of a local job with one window of size
// bytes (the receive area is its second half) and two signals.
type benchPair struct {
	comms []*gin.Comm
	x0    *gin.Context
	win   [2]*gin.Window
	ctx   context.Context
}

// newBenchPair builds the pair; spins > 0 makes every wait spin that many
// times before it yields (for ping-pongs, where both ranks spin).
func newBenchPair(b *testing.B, size, spins int) *benchPair {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	b.Cleanup(cancel)
	cfg := gin.Config{Signals: 2}
	if spins > 0 {
		cfg.Idle = gin.IdleStrategy{Spins: spins, Yields: 1 << 10, MinSleep: time.Microsecond, MaxSleep: 100 * time.Microsecond}
	}
	comms, err := gin.NewLocal(ctx, 2, cfg)
	if err != nil {
		b.Fatal(err)
	}
	p := &benchPair{comms: comms, ctx: ctx}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, c := range comms {
		wg.Go(func() { p.win[r], errs[r] = c.RegisterWindow(ctx, 2*size, 0) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() {
		for _, c := range comms {
			c.Close()
		}
	})
	if p.x0, err = comms[0].Context(0); err != nil {
		b.Fatal(err)
	}
	for r := range 2 {
		fill(p.win[r].Bytes(), r)
	}
	// Warm up: the first put to a peer on a signal creates its endpoints;
	// do that here, not in the timed loops.
	for r, c := range comms {
		x := mustContext(b, c)
		for s := range gin.Signal(2) {
			if err := x.Put(c.World(), 1-r, p.win[r], size, p.win[r], 0, 8, gin.SignalInc(s), gin.LocalNone); err != nil {
				b.Fatal(err)
			}
		}
		if err := x.Flush(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

func fill(b []byte, r int) {
	for i := range b {
		b[i] = byte(r*31 + i)
	}
}

// report adds ns/put and GB/s (1e9 bytes/s) for puts of size bytes, b.N of
// them since the timer started.
func report(b *testing.B, size int) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "ns/put")
	b.ReportMetric(float64(size)/ns, "GB/s")
}

// BenchmarkPut is a stream of Put + SignalInc from rank 0 into rank 1's
// window (no waiter): the cost of one post. Baseline "copy": Go copy into
// rank 1's mapping plus an atomic add on a word of it.
func BenchmarkPut(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("size=%dB", n), func(b *testing.B) {
			p := newBenchPair(b, n, 0)
			team := p.comms[0].World()
			b.Run("copy", func(b *testing.B) {
				dst, src := p.win[1].Bytes()[n:2*n], p.win[0].Bytes()[:n]
				word := memword.Uint64(p.win[1].Bytes(), 0)
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					copy(dst, src)
					word.Add(1)
				}
				report(b, n)
			})
			b.Run("put", func(b *testing.B) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					if err := p.x0.Put(team, 1, p.win[0], n, p.win[0], 0, n, gin.SignalInc(0), gin.LocalNone); err != nil {
						b.Fatal(err)
					}
				}
				report(b, n)
			})
		})
	}
}

// BenchmarkPutValue is a stream of 8-byte PutValue + SignalInc (the value
// staged in the endpoint's slot pool). Baseline "copy": a little-endian
// store into rank 1's mapping plus an atomic add.
func BenchmarkPutValue(b *testing.B) {
	p := newBenchPair(b, 4096, 0)
	team := p.comms[0].World()
	b.Run("copy", func(b *testing.B) {
		dst := p.win[1].Bytes()[64:72]
		word := memword.Uint64(p.win[1].Bytes(), 0)
		b.ReportAllocs()
		v := uint64(0)
		for b.Loop() {
			v++
			binary.LittleEndian.PutUint64(dst, v)
			word.Add(1)
		}
		report(b, 8)
	})
	b.Run("putvalue", func(b *testing.B) {
		b.ReportAllocs()
		v := uint64(0)
		for b.Loop() {
			v++
			if err := p.x0.PutValue(team, 1, p.win[0], 64, v, 8, gin.SignalInc(0)); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 8)
	})
}

// BenchmarkPutAggregate posts batches of 16 Put + SignalInc with Aggregate
// (the doorbell is deferred) and ends each batch with Flush; "single" posts
// the same batches without Aggregate. b.N counts puts.
func BenchmarkPutAggregate(b *testing.B) {
	const batch = 16
	for _, n := range []int{8, 4 << 10} {
		b.Run(fmt.Sprintf("size=%dB", n), func(b *testing.B) {
			p := newBenchPair(b, batch*n, 0)
			team := p.comms[0].World()
			run := func(b *testing.B, opts ...gin.Option) {
				b.SetBytes(int64(n))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					off := (i % batch) * n
					if err := p.x0.Put(team, 1, p.win[0], batch*n+off, p.win[0], off, n, gin.SignalInc(0), gin.LocalNone, opts...); err != nil {
						b.Fatal(err)
					}
					if i++; i%batch == 0 {
						if err := p.x0.Flush(p.ctx); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := p.x0.Flush(p.ctx); err != nil {
					b.Fatal(err)
				}
				report(b, n)
			}
			b.Run("single", func(b *testing.B) { run(b) })
			b.Run("aggregate", func(b *testing.B) { run(b, gin.Aggregate) })
		})
	}
}

// BenchmarkPingPong is cmd/rdmabench's putsig_lat in one process: rank 0
// puts with SignalInc and waits for rank 1's answer; ns/op is a round
// trip, one-way-ns half of it. Baseline "copy": the same ping-pong with Go
// copy + atomic add on the peer's mapping and spinning atomic loads. Both
// goroutines spin (GOMAXPROCS must be at least 2 for sensible figures).
func BenchmarkPingPong(b *testing.B) {
	for _, n := range []int{8, 64 << 10} {
		b.Run(fmt.Sprintf("size=%dB", n), func(b *testing.B) {
			p := newBenchPair(b, n, 1<<20)
			b.Run("copy", func(b *testing.B) {
				// Rank r waits on word 0 of its own window and copies its
				// first half into the second half of the peer's.
				var flag [2]*atomic.Uint64
				var src, dst [2][]byte
				for r := range 2 {
					flag[r] = memword.Uint64(p.win[r].Bytes(), 0)
					flag[r].Store(0)
					src[r], dst[r] = p.win[r].Bytes()[:n], p.win[1-r].Bytes()[n:2*n]
				}
				pingPong(b, n, func(me int) {
					copy(dst[me], src[me])
					flag[1-me].Add(1)
				}, func(me int, k uint64) {
					for flag[me].Load() < k {
					}
				})
			})
			b.Run("put", func(b *testing.B) {
				x := [2]*gin.Context{p.x0, mustContext(b, p.comms[1])}
				var seen [2]uint64
				for r := range 2 {
					v, err := x[r].ReadSignal(1, 64)
					if err != nil {
						b.Fatal(err)
					}
					seen[r] = v
				}
				pingPong(b, n, func(me int) {
					if err := x[me].Put(p.comms[me].World(), 1-me, p.win[me], n, p.win[me], 0, n, gin.SignalInc(1), gin.LocalNone); err != nil {
						panic(err)
					}
				}, func(me int, k uint64) {
					if _, err := x[me].WaitSignal(p.ctx, 1, seen[me]+k, 64); err != nil {
						panic(err)
					}
				})
			})
		})
	}
}

func mustContext(b *testing.B, c *gin.Comm) *gin.Context {
	x, err := c.Context(0)
	if err != nil {
		b.Fatal(err)
	}
	return x
}

// pingPong runs b.N round trips: rank 0 sends and waits for its k-th
// answer; rank 1, on its own goroutine, waits for the k-th message and
// answers. Waits count from 0 in each call.
func pingPong(b *testing.B, size int, send func(me int), wait func(me int, k uint64)) {
	b.SetBytes(int64(size))
	b.ReportAllocs()
	done := make(chan struct{})
	b.ResetTimer()
	go func() {
		defer close(done)
		for k := uint64(1); k <= uint64(b.N); k++ {
			wait(1, k)
			send(1)
		}
	}()
	for k := uint64(1); k <= uint64(b.N); k++ {
		send(0)
		wait(0, k)
	}
	b.StopTimer()
	<-done
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "one-way-ns")
}
