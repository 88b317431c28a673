package remote

import (
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// Actor names of the remote control plane.
const (
	coordinatorName = "rdmactor-bootstrap" // on rank 0
	rankActorName   = "rdmactor-rank"      // on every rank
)

// reasonConnClosed is the PeerLostError reason for a rank whose control
// connection broke.
const reasonConnClosed = "control connection closed"

// endpointDown tells a local actor that protoactor-go published
// remote.EndpointTerminatedEvent for addr: the connection to it is gone.
type endpointDown struct{ addr string }

// receive opens the sealed control message ctx holds, for the actor named
// who. ok is false for any other message and for a refused one, which is
// logged (RDMACTOR_DEBUG) and dropped: it is an outsider's or a replay,
// nothing an actor acts on.
func (s *sealer) receive(ctx actor.Context, who string) (k kind, v any, ok bool) {
	m, sealed := ctx.Message().(*wrapperspb.BytesValue)
	if !sealed {
		return 0, nil, false
	}
	k, _, v, err := s.open(m)
	if err != nil {
		ctx.Logger().Warn(who, slog.Any("error", err))
		return 0, nil, false
	}
	return k, v, true
}

// coordinator is rank 0's actor: it admits ranks, completes collectives and
// reports losses and leaves. Its fields are used only by Receive (one message
// at a time), except addrs, which is written under mu.
type coordinator struct {
	n         int
	seal      *sealer // seals as rank 0, opens what the ranks send
	byAddr    map[string]int
	joined    int
	welcomed  bool
	rounds    map[uint64]*bootstrap.Round
	left      []bool // said leaving
	lost      []bool // reported lost
	leftAcked []bool // acknowledged rank 0's leaving
	rank0Left bool
	groups    *bootstrap.Groups // Shrink's agreements and shrunk groups

	drained   chan struct{} // closed once rank 0 left and every other rank left, was lost or acknowledged
	drainOnce sync.Once

	mu    sync.Mutex
	addrs []string // rank actor addresses by rank; "" until joined
}

func newCoordinator(n int, seal *sealer) *coordinator {
	return &coordinator{
		n:         n,
		seal:      seal,
		byAddr:    make(map[string]int),
		rounds:    make(map[uint64]*bootstrap.Round),
		left:      make([]bool, n),
		lost:      make([]bool, n),
		leftAcked: make([]bool, n),
		groups:    bootstrap.NewGroups(n),
		drained:   make(chan struct{}),
		addrs:     make([]string, n),
	}
}

// missing returns the ranks that have not joined yet.
func (c *coordinator) missing() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m []int
	for r, a := range c.addrs {
		if a == "" {
			m = append(m, r)
		}
	}
	return m
}

// Receive handles control messages and endpointDown.
func (c *coordinator) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*endpointDown); ok {
		r, ok := c.byAddr[m.addr]
		if !ok || r == 0 || c.left[r] || c.lost[r] {
			return
		}
		c.lost[r] = true
		c.broadcast(ctx, kindLost, &lost{Rank: r, Reason: reasonConnClosed})
		c.deliver(ctx, c.groups.Lose(r))
		c.checkDrained()
		return
	}
	k, v, ok := c.seal.receive(ctx, "bootstrap coordinator")
	if !ok {
		return
	}
	switch k {
	case kindJoin:
		c.join(ctx, v.(*join))
	case kindContrib:
		c.contrib(ctx, v.(*contrib))
	case kindLeaving:
		c.leaving(ctx, v.(*leaving))
	case kindLeftAck:
		if r := v.(*ack).Rank; c.valid(r) {
			c.leftAcked[r] = true
			c.checkDrained()
		}
	case kindShrink:
		m := v.(*shrinkMsg)
		c.deliver(ctx, c.groups.Agree(m.Parent, m.K, m.Rank, m.Lost))
	case kindGroupContrib:
		m := v.(*groupContrib)
		if to, all, done := c.groups.Gather(m.Group, m.Seq, m.Rank, m.Data); done {
			c.multicast(ctx, to, kindGroupGathered, &groupGathered{Group: m.Group, Seq: m.Seq, Data: all})
		}
	case kindGroupLeaving:
		m := v.(*groupLeaving)
		ds := c.groups.Leave(m.Group, m.Rank)
		var to []int
		for _, w := range c.groups.Members(m.Group) {
			if w != m.Rank {
				to = append(to, w)
			}
		}
		c.multicast(ctx, to, kindGroupLeft, m)
		c.deliver(ctx, ds)
	}
}

// deliver sends Shrink outcomes to the ranks that wait for them.
func (c *coordinator) deliver(ctx actor.Context, ds []bootstrap.Delivery) {
	for _, d := range ds {
		if c.valid(d.To) && !c.left[d.To] && !c.lost[d.To] {
			c.send(ctx, d.To, kindAgreed, d.Agreed)
		}
	}
}

// multicast sends one message to the ranks to that have neither left nor
// been lost.
func (c *coordinator) multicast(ctx actor.Context, to []int, k kind, v any) {
	msg := c.seal.seal(k, v)
	for _, r := range to {
		if !c.valid(r) || c.addrs[r] == "" || c.left[r] || c.lost[r] {
			continue
		}
		ctx.Send(actor.NewPID(c.addrs[r], rankActorName), &wrapperspb.BytesValue{Value: msg.Value})
	}
}

func (c *coordinator) valid(rank int) bool { return rank >= 0 && rank < c.n }

func (c *coordinator) join(ctx actor.Context, j *join) {
	if !c.valid(j.Rank) || j.Addr == "" {
		ctx.Logger().Warn("bootstrap coordinator: bad join", slog.Int("rank", j.Rank), slog.String("addr", j.Addr))
		return
	}
	c.mu.Lock()
	prev := c.addrs[j.Rank]
	if prev == "" {
		c.addrs[j.Rank] = j.Addr
	}
	c.mu.Unlock()
	if prev != "" && prev != j.Addr {
		ctx.Logger().Warn("bootstrap coordinator: rank joined twice", slog.Int("rank", j.Rank),
			slog.String("first", prev), slog.String("second", j.Addr))
		return
	}
	if prev == "" {
		c.joined++
		c.byAddr[j.Addr] = j.Rank
	}
	// The answer also opens rank 0's connection to the rank, which is how its
	// loss is detected.
	c.send(ctx, j.Rank, kindJoinAck, &ack{Rank: 0})
	switch {
	case c.welcomed:
		c.send(ctx, j.Rank, kindWelcome, &welcome{Addrs: c.addrs})
	case c.joined == c.n:
		c.welcomed = true
		c.broadcast(ctx, kindWelcome, &welcome{Addrs: c.addrs})
	}
}

func (c *coordinator) contrib(ctx actor.Context, m *contrib) {
	if !c.valid(m.Rank) {
		return
	}
	rd := c.rounds[m.Seq]
	if rd == nil {
		rd = bootstrap.NewRound(c.n)
		c.rounds[m.Seq] = rd
	}
	if rd.Add(m.Rank, m.Data) {
		delete(c.rounds, m.Seq)
		c.broadcast(ctx, kindGathered, &gathered{Seq: m.Seq, Data: rd.Data()})
	}
}

func (c *coordinator) leaving(ctx actor.Context, l *leaving) {
	if !c.valid(l.Rank) {
		return
	}
	c.send(ctx, l.Rank, kindLeaveAck, &ack{Rank: 0})
	c.left[l.Rank] = true
	c.deliver(ctx, c.groups.Leave("", l.Rank))
	if l.Rank == 0 {
		c.rank0Left = true
	}
	c.broadcast(ctx, kindLeft, l)
	c.checkDrained()
}

// checkDrained closes drained once rank 0 left and no other rank still has
// to learn it.
func (c *coordinator) checkDrained() {
	if !c.rank0Left {
		return
	}
	for r := 1; r < c.n; r++ {
		if !c.left[r] && !c.lost[r] && !c.leftAcked[r] && c.addrs[r] != "" {
			return
		}
	}
	c.drainOnce.Do(func() { close(c.drained) })
}

// send sends one message to rank's rank actor.
func (c *coordinator) send(ctx actor.Context, rank int, k kind, v any) {
	if c.addrs[rank] == "" {
		return
	}
	ctx.Send(actor.NewPID(c.addrs[rank], rankActorName), c.seal.seal(k, v))
}

// broadcast sends one message to every joined rank that has neither left
// nor been lost (rank 0 included while it has not left).
func (c *coordinator) broadcast(ctx actor.Context, k kind, v any) {
	msg := c.seal.seal(k, v)
	for r, a := range c.addrs {
		if a == "" || c.left[r] || c.lost[r] {
			continue
		}
		// A BytesValue per destination: the bytes are shared, read only.
		ctx.Send(actor.NewPID(a, rankActorName), &wrapperspb.BytesValue{Value: msg.Value})
	}
}
