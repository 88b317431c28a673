// Command pingpong measures rdmactor's actors between ranks side by side
// with protoactor-go's own remote (gRPC over loopback) as the anchor: the
// same actors, the same message bytes, in the same processes, in
// alternating repetitions. At the end rank 0 prints latency percentiles,
// throughput and the ratios. Messages are a sequence number and -size
// bytes: on rdmactor a struct encoded by msgpack's reflection (rdmactor)
// and one with hand-written msgpack methods (rdmactor+codec, the
// counterpart of generated code); on the anchor a protobuf
// wrapperspb.BytesValue (generated code).
//
//	go build -o bin/ ./cmd/rdmarun ./examples/pingpong
//	bin/rdmarun -np 2 bin/pingpong          # round trips, 1 sender → 1 receiver
//	bin/rdmarun -np 5 bin/pingpong          # also 4 senders → 1 receiver
//	bin/pingpong -local 2                   # ranks as goroutines of one process
//
// Figures:
//   - rtt: request/response round trips of a -size byte message between an
//     actor on rank 0 (Context.Request) and one on rank 1 (Context.Respond),
//     one at a time: median and p99 of every round trip, receivers warm
//     (spinning or yielding: the next request comes at once).
//   - rtt after idle: single round trips -pause apart, so that both
//     receive loops have backed off to parking (mailbox.DefaultIdle).
//   - throughput: ranks 1..S send -msgs messages each, as fast as
//     Root().Send returns, to one actor on rank 0, which counts them;
//     messages/s from the start command to the last arrival. S = 1, and
//     S = np-1 when np > 2.
//   - cpu per msg: CPU time of the receiving process plus the sending
//     processes per message in the throughput runs (median over
//     repetitions), the figure a busy host disturbs least. With -local all
//     ranks are one process, and each of the two counts all of it.
//   - mesh: every rank makes -mesh-n requests (RequestFuture, one at a
//     time) to random other ranks while answering theirs: p50 and p99 of
//     every request, and requests/s of the whole job. Run it with more
//     ranks than cores to see an oversubscribed host.
//   - idle CPU: the CPU time ranks 0 and 1 use during -idle-window with no
//     traffic, as a share of one core (both transports' stacks are in the
//     process; -anchor none measures rdmactor alone).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync"
	"syscall"
	"time"

	"github.com/rdmactor/rdmactor/actor"
)

type options struct {
	local      int
	anchor     string
	codec      bool
	size       int
	n, warmup  int
	idleN      int
	pause      time.Duration
	msgs       int
	meshN      int
	reps       int
	idleWindow time.Duration
	timeout    time.Duration
	cpuprofile string
	only       string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("pingpong: ")
	var o options
	flag.IntVar(&o.local, "local", 0, "run this many ranks as goroutines of one process instead of reading RDMACTOR_* from the launcher")
	flag.StringVar(&o.anchor, "anchor", "protoremote", "anchor measured side by side: protoremote (protoactor-go remote over gRPC) or none")
	flag.BoolVar(&o.codec, "codec", true, "also measure rdmactor with a message type that has hand-written msgpack methods (rdmactor+codec)")
	flag.IntVar(&o.size, "size", 16, "message payload bytes")
	flag.IntVar(&o.n, "n", 20000, "round trips per repetition")
	flag.IntVar(&o.warmup, "warmup", 2000, "round trips before each repetition, not measured")
	flag.IntVar(&o.idleN, "idle-n", 20, "round trips after an idle pause, per repetition")
	flag.DurationVar(&o.pause, "pause", 100*time.Millisecond, "idle pause before each of those round trips")
	flag.IntVar(&o.msgs, "msgs", 500000, "one-way messages per sender per repetition")
	flag.IntVar(&o.meshN, "mesh-n", 2000, "requests per rank in the mesh figure (every rank requests from random others)")
	flag.IntVar(&o.reps, "reps", 3, "repetitions of each figure (transports alternate)")
	flag.DurationVar(&o.idleWindow, "idle-window", time.Second, "window for the idle CPU figure (0: skip)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "deadline for the whole run")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write rank 0's CPU profile of the throughput phase to this file")
	flag.StringVar(&o.only, "only", "", "run only this figure: rtt, idle, throughput or mesh (default: all)")
	flag.Parse()
	if o.anchor != "protoremote" && o.anchor != "none" {
		log.Fatalf("-anchor %q: want protoremote or none", o.anchor)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	err := actor.RunRanks(ctx, o.local, actor.Config{}, func(ctx context.Context, n *actor.Node) error {
		return runRank(ctx, n, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// rank is what every rank runs besides the driver: its transports and the
// control actor through which rank 0 steers it.
type rank struct {
	node       *actor.Node
	ts         map[string]*transport
	order      []*transport
	anchorAddr string
	finished   chan struct{}
	blasts     sync.WaitGroup
}

func runRank(ctx context.Context, n *actor.Node, o options) (err error) {
	defer func() { err = errors.Join(err, n.Close()) }()
	if n.Size() < 2 {
		return errors.New("needs at least 2 ranks (rdmarun -np 2)")
	}
	r := &rank{node: n, ts: map[string]*transport{}, finished: make(chan struct{})}
	for _, codec := range []bool{false, true} {
		if codec && !o.codec {
			continue
		}
		rt := rdmactorTransport(n, codec)
		r.ts[rt.name], r.order = rt, append(r.order, rt)
	}
	if o.anchor == "protoremote" {
		at, err := protoremoteTransport(n.Size())
		if err != nil {
			return err
		}
		r.ts[at.name], r.order = at, append(r.order, at)
		r.anchorAddr = at.system.Address()
		at.addrs[n.Rank()] = r.anchorAddr
	}
	for i, t := range r.order {
		var shared *transport
		if i > 0 && t.system == r.order[0].system {
			shared = r.order[0]
		}
		if err := t.spawn(n.Rank(), shared); err != nil {
			return err
		}
	}
	if _, err := n.SpawnNamed(actor.PropsFromFunc(r.control), "ctl"); err != nil {
		return err
	}
	if err := n.Barrier(ctx); err != nil {
		return err
	}
	if n.Rank() == 0 {
		if err := drive(ctx, r, o); err != nil {
			return err
		}
	} else {
		select {
		case <-r.finished:
		case <-ctx.Done():
			return fmt.Errorf("rank 0 never finished: %w", ctx.Err())
		}
		r.blasts.Wait()
	}
	return n.Barrier(ctx)
}

// control is the control actor of every rank.
func (r *rank) control(c actor.Context) {
	switch m := c.Message().(type) {
	case *AnchorAddrRequest:
		c.Respond(&AnchorAddr{Addr: r.anchorAddr})
	case *Blast:
		t := r.ts[m.Transport]
		target := actor.NewPID(m.SinkAddr, "sink")
		msg := t.msg(m.Size)
		r.blasts.Add(1)
		go func() {
			defer r.blasts.Done()
			root := t.system.Root
			for range m.N {
				root.Send(target, msg)
			}
		}()
		c.Respond(&Ack{})
	case *CPURequest:
		r.blasts.Wait() // a blast's goroutine has returned from its last Send
		c.Respond(&CPU{Used: cpuTime()})
	case *Mesh:
		sender := c.Sender()
		go func() { r.node.Root().Send(sender, r.mesh(m)) }()
	case *Finish:
		close(r.finished)
		c.Respond(&Ack{})
	}
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
