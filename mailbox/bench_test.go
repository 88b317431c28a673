package mailbox_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/mailbox"
)

// batching are the two send modes: every frame put on its own, and bursts
// batched by the writer (the default).
var batching = []struct {
	name string
	gap  time.Duration
}{{"batch=off", -1}, {"batch=on", 0}}

// One-way frames from rank 0 to rank 1 (goroutines of this process): the
// sender's cost per frame and the rate the receive loop keeps up with,
// with and without burst batching. Reports ns/frame, frames/s and
// allocations on the send path.
func BenchmarkSend(b *testing.B) {
	for _, size := range []int{16, 256, 4096, 64 << 10} {
		for _, bt := range batching {
			b.Run(fmt.Sprintf("body=%dB/%s", size, bt.name), func(b *testing.B) { benchSend(b, size, bt.gap) })
		}
	}
}

func benchSend(b *testing.B, size int, gap time.Duration) {
	{
		{
			_, boxes := local(&testing.T{}, 2, mailbox.Config{BatchGap: gap})
			defer func() {
				for _, m := range boxes {
					m.Close()
				}
			}()
			var got atomic.Int64
			boxes[1].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) { got.Add(1) }})
			body := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := boxes[0].Send(1, 1, body); err != nil {
					b.Fatal(err)
				}
			}
			for got.Load() < int64(b.N) {
				time.Sleep(10 * time.Microsecond)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "frames/s")
		}
	}
}

// Round trips of a 16-byte frame between two receive loops: rank 1's
// handler answers each frame with TrySend. Batching must not slow it down.
func BenchmarkPingPong(b *testing.B) {
	for _, bt := range batching {
		b.Run(bt.name, func(b *testing.B) { pingPong(b, bt.gap) })
	}
}

func pingPong(b *testing.B, gap time.Duration) {
	_, boxes := local(&testing.T{}, 2, mailbox.Config{BatchGap: gap})
	defer func() {
		for _, m := range boxes {
			m.Close()
		}
	}()
	body := make([]byte, 16)
	pong := make(chan struct{}, 1)
	boxes[1].Start(mailbox.Handler{Frame: func(from int, _ mailbox.Kind, body []byte) {
		if err := boxes[1].TrySend(from, 1, body); err != nil {
			panic(err)
		}
	}})
	boxes[0].Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) { pong <- struct{}{} }})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := boxes[0].Send(1, 1, body); err != nil {
			b.Fatal(err)
		}
		<-pong
	}
}
