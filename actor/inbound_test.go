package actor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
)

// Messages of the inbound-limit test.
type (
	fill struct {
		Seq int
		Pad []byte
	}
	fillEnd struct{ Count int }
)

func init() {
	actor.RegisterMessage[fill]()
	actor.RegisterMessage[fillEnd]()
	testutils.Role("inbound", roleInbound)
}

// The inbound-limit test's settings: a small limit keeps it fast.
const (
	inboundLimit   = 4 << 20
	inboundSlack   = 50 << 20 // heap allowed above the limit
	inboundStall   = 4 * time.Second
	inboundFlood   = 3 * time.Second
	inboundOthers  = 2000 // messages rank 2 sends the free actor during the stall
	inboundPadSize = 1 << 10
)

// Rank 0's "stalled" actor blocks for seconds on its first message while
// rank 1 floods it with 1 KiB messages. Rank 0's heap grows by no more
// than MaxInbound plus 50 MiB, rank 1's sends fail with ErrRingFull instead,
// and rank 0's "free" actor, fed by rank 2, keeps receiving all along.
// After the stall every message rank 1 had accepted arrives once, in
// order.
func TestProcessesInboundLimit(t *testing.T) {
	testutils.RunRanks(t, 3, "inbound")
}

func roleInbound() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := actor.Config{MaxInbound: inboundLimit}
	cfg.Mailbox.SendTimeout = 300 * time.Millisecond
	n, err := actor.Init(ctx, cfg)
	if err != nil {
		return err
	}
	defer n.Close()
	if n.Size() != 3 {
		return fmt.Errorf("want 3 ranks, have %d", n.Size())
	}
	switch n.Rank() {
	case 0:
		err = inboundReceiver(ctx, n)
	case 1:
		err = inboundFlooder(ctx, n)
	default:
		err = inboundOther(ctx, n)
	}
	if err != nil {
		return fmt.Errorf("rank %d: %w", n.Rank(), err)
	}
	return n.Barrier(ctx)
}

// inboundReceiver is rank 0: it stalls "stalled", watches its heap, then
// lets it go and checks what it got.
func inboundReceiver(ctx context.Context, n *actor.Node) error {
	blocked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	next, first := 0, true
	if _, err := n.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *fill:
			if first {
				first = false
				close(blocked)
				<-release
			}
			if m.Seq != next && next >= 0 {
				done <- fmt.Errorf("stalled actor: message %d arrived, want %d (lost, duplicated or reordered)", m.Seq, next)
				next = -1
			}
			if next >= 0 {
				next++
			}
		case *fillEnd:
			if next >= 0 {
				if m.Count != next {
					done <- fmt.Errorf("stalled actor: %d messages arrived, rank 1 had %d accepted", next, m.Count)
				} else {
					done <- nil
				}
			}
		}
	}), "stalled"); err != nil {
		return err
	}
	var released, answeredInStall atomic.Bool
	answered := make(chan struct{})
	freeCount := 0
	var freeErr error
	if _, err := n.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *fill:
			if m.Seq != freeCount && freeErr == nil {
				freeErr = fmt.Errorf("free actor: message %d arrived, want %d", m.Seq, freeCount)
			}
			freeCount++
		case *ping:
			answeredInStall.Store(!released.Load())
			c.Respond(&pong{N: freeCount, From: fmt.Sprint(freeErr)})
			close(answered)
		}
	}), "free"); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapInuse
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	select {
	case <-blocked:
	case <-ctx.Done():
		return errors.New("the stalled actor never got a message")
	}
	// The stall: at least inboundStall, and until rank 2 has had its answer.
	var maxHeap, maxRSS uint64
	var maxInbound int64
	start := time.Now()
	for stallEnd := start.Add(inboundStall); ; time.Sleep(20 * time.Millisecond) {
		runtime.ReadMemStats(&ms)
		maxHeap = max(maxHeap, ms.HeapInuse)
		maxRSS = max(maxRSS, rss())
		maxInbound = max(maxInbound, n.InboundBytes())
		if time.Now().After(stallEnd) {
			select {
			case <-answered:
			default:
				if time.Since(start) < 30*time.Second {
					continue
				}
			}
			break
		}
	}
	st := n.Mailbox().Stats()
	released.Store(true)
	close(release)
	fmt.Printf("rank 0: heap in use %.1f MiB before the flood\n", mib(baseHeap))
	fmt.Printf("rank 0: stalled %v: heap in use at most %.1f MiB, RSS at most %.1f MiB, inbound at most %.2f MiB (limit %.0f MiB), %d holds\n",
		time.Since(start).Round(time.Millisecond), mib(maxHeap), mib(maxRSS), float64(maxInbound)/(1<<20), float64(inboundLimit)/(1<<20), st.Holds)
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return fmt.Errorf("after the stall: no end marker; %d messages arrived", next)
	}
	fmt.Printf("rank 0: after the stall all %d accepted messages arrived in order; inbound now %d bytes\n", next, n.InboundBytes())
	switch {
	case maxHeap > baseHeap+inboundLimit+inboundSlack:
		return fmt.Errorf("heap in use grew by %.1f MiB during the stall, over the limit plus %d MiB", mib(maxHeap-baseHeap), inboundSlack>>20)
	case maxInbound < inboundLimit/2:
		return fmt.Errorf("inbound reached only %d bytes: the flood did not fill the limit", maxInbound)
	case maxInbound > inboundLimit+8*inboundPadSize:
		return fmt.Errorf("inbound reached %d bytes, over the %d-byte limit", maxInbound, inboundLimit)
	case st.Holds == 0:
		return errors.New("no pair was held")
	case !answeredInStall.Load():
		return errors.New("the free actor did not answer rank 2 during the stall")
	}
	return nil
}

// inboundFlooder is rank 1: it floods the stalled actor, retrying a
// message that met a full ring, then sends how many were accepted.
func inboundFlooder(ctx context.Context, n *actor.Node) error {
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	to := n.PID(0, "stalled")
	pad := make([]byte, inboundPadSize)
	seq, full := 0, 0
	for start := time.Now(); time.Since(start) < inboundFlood; {
		err := n.Tell(to, &fill{Seq: seq, Pad: pad})
		switch {
		case err == nil:
			seq++
		case errors.Is(err, mailbox.ErrRingFull):
			full++
		default:
			return err
		}
	}
	for {
		err := n.Tell(to, &fillEnd{Count: seq})
		if err == nil {
			break
		}
		if !errors.Is(err, mailbox.ErrRingFull) || ctx.Err() != nil {
			return fmt.Errorf("end marker: %w", err)
		}
	}
	fmt.Printf("rank 1: %d messages of %d bytes accepted in %v, %d sends met a full ring\n", seq, inboundPadSize, inboundFlood, full)
	if full == 0 {
		return errors.New("no send met a full ring: the stalled rank took everything")
	}
	return nil
}

// inboundOther is rank 2: during the stall it sends the free actor
// inboundOthers messages and asks how many arrived.
func inboundOther(ctx context.Context, n *actor.Node) error {
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	time.Sleep(time.Second) // the flood has filled rank 0's limit by now
	to := n.PID(0, "free")
	pad := make([]byte, inboundPadSize)
	start := time.Now()
	for seq := range inboundOthers {
		if err := n.Tell(to, &fill{Seq: seq, Pad: pad}); err != nil {
			return fmt.Errorf("message %d to the free actor: %w", seq, err)
		}
	}
	res, err := n.Root().RequestFuture(to, &ping{}, 20*time.Second).Result()
	if err != nil {
		return fmt.Errorf("ask the free actor: %w", err)
	}
	p := res.(*pong)
	if p.N != inboundOthers || p.From != "<nil>" {
		return fmt.Errorf("the free actor got %d of %d messages (%s)", p.N, inboundOthers, p.From)
	}
	fmt.Printf("rank 2: the free actor took %d messages during the stall in %v\n", inboundOthers, time.Since(start).Round(time.Millisecond))
	return nil
}

// rss is this process's resident set in bytes (/proc/self/statm), 0 where
// that cannot be read.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// Messages counted against MaxInbound stop counting when their actor
// panics on them or stops with them still queued, and the pair held for
// that actor is resumed: the count does not leak.
func TestInboundCountEndsWithActor(t *testing.T) {
	cfg := actor.Config{MaxInbound: 64 << 10}
	cfg.Mailbox.SendTimeout = 200 * time.Millisecond
	nodes := startLocal(t, 2, cfg)
	ctx := testutils.Deadline(t, 30*time.Second)
	release := make(chan struct{})
	var got atomic.Int64
	pid, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*fill); ok {
			if m.Seq == 0 {
				<-release
			}
			got.Add(1)
			if m.Seq%2 == 1 {
				panic("odd") // restarted by its supervisor; the message still counts as taken
			}
		}
	}), "sink")
	if err != nil {
		t.Fatal(err)
	}
	to := nodes[0].PID(1, "sink")
	pad := make([]byte, inboundPadSize)
	sent, full := 0, 0
	for sent < 200 {
		err := nodes[0].Tell(to, &fill{Seq: sent, Pad: pad})
		if errors.Is(err, mailbox.ErrRingFull) {
			full++
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sent++
	}
	// 200 KiB sent: the receiving rank takes 64 KiB of it and holds the
	// pair, and the rest waits in the ring.
	for nodes[1].Mailbox().Stats().Holds == 0 {
		if ctx.Err() != nil {
			t.Fatalf("no pair held; inbound %d bytes", nodes[1].InboundBytes())
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if in := nodes[1].InboundBytes(); in < 32<<10 || in > 64<<10+2*inboundPadSize {
		t.Errorf("inbound %d bytes during the stall, want about the 64 KiB limit", in)
	}
	// Panics, then a stop with messages still queued.
	close(release)
	for got.Load() < 10 {
		if ctx.Err() != nil {
			t.Fatalf("%d messages taken after the stall", got.Load())
		}
		time.Sleep(time.Millisecond)
	}
	nodes[1].Root().Stop(pid)
	for nodes[1].InboundBytes() != 0 {
		if ctx.Err() != nil {
			t.Fatalf("inbound still %d bytes after the actor stopped (%d taken, %d sent, %d full)", nodes[1].InboundBytes(), got.Load(), sent, full)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("%d sent before the ring was full (%d full), %d taken before the stop", sent, full, got.Load())
}
