package actor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/actorsys"
	"github.com/rdmactor/rdmactor/mailbox"
)

// Node is one rank's actor runtime: a protoactor-go ActorSystem whose PIDs
// carry this rank's address, an address resolver that turns PIDs of other
// ranks into handles that send through the remote mailbox, and the
// mailbox's receive loop that delivers what other ranks send here.
//
// A Node is safe for concurrent use.
type Node struct {
	cfg     Config
	comm    *gin.Comm
	ownComm bool
	rank    int
	size    int
	addrs   []string // by rank
	system  *protoactor.ActorSystem
	mb      *mailbox.Mailbox
	procs   []*remoteProcess // by rank; nil for this rank

	// gone holds, per rank, why it can no longer be reached (it left, was
	// lost, or the Comm failed), or nil.
	gone    []atomic.Pointer[error]
	watches watchTable

	// Receive-loop state: only the mailbox's receive goroutine uses it.
	dec        *msgpack.Decoder
	rd         bytesReader
	targets    map[string]*PID            // local PIDs by id
	lastTarget *PID                       // the last of them
	senders    map[string]map[string]*PID // remote PIDs by address, id
	lastType   typeCache
	chunks     reassembly // chunked messages being received
	warmBody   []byte     // a copy of the last small user message's frame body (warm.go)
	warmFrom   int        // the rank it came from
	warmPID    *PID       // the actor warm hands messages to

	chunkIDs atomic.Uint64  // numbers this node's chunked sends
	pending  pendingFutures // futures waiting for other ranks' answers
	in       inbound        // messages decoded and not yet processed (Config.MaxInbound)

	slowQ  chan func()
	stop   chan struct{}
	closed atomic.Bool
	logs   logLimiter
}

// addressPrefix starts the Address of every PID of a rank: "rdmactor:3"
// is rank 3 of the job.
const addressPrefix = "rdmactor:"

// AddressOf is the PID Address of rank's actors: "rdmactor:<rank>".
func AddressOf(rank int) string { return addressPrefix + strconv.Itoa(rank) }

// RankOf returns the rank a PID's Address names, and false for an address
// that names no rank (a nil PID, another transport's "host:port", or
// protoactor-go's "nonhost").
func RankOf(pid *PID) (int, bool) {
	if pid == nil || !strings.HasPrefix(pid.Address, addressPrefix) {
		return 0, false
	}
	r, err := strconv.Atoi(pid.Address[len(addressPrefix):])
	if err != nil || r < 0 {
		return 0, false
	}
	return r, true
}

// Start starts this rank's Node over comm, which stays the caller's to
// close (after Node.Close). Collective: every rank of comm calls it with an
// equal cfg (it registers the mailbox window). comm needs
// cfg.Mailbox.SignalBase + mailbox.SignalsNeeded(Size) signals.
//
// Errors are the mailbox's (mailbox.New).
func Start(ctx context.Context, comm *gin.Comm, cfg Config) (*Node, error) {
	cfg.setDefaults()
	n := &Node{
		cfg: cfg, comm: comm, rank: comm.Rank(), size: comm.Size(),
		addrs:   make([]string, comm.Size()),
		procs:   make([]*remoteProcess, comm.Size()),
		gone:    make([]atomic.Pointer[error], comm.Size()),
		targets: map[string]*PID{},
		senders: map[string]map[string]*PID{},
		slowQ:   make(chan func(), cfg.SlowQueue),
		stop:    make(chan struct{}),
	}
	n.watches.byRank = map[int]map[watchEntry]struct{}{}
	for r := range n.addrs {
		n.addrs[r] = AddressOf(r)
		if r != n.rank {
			n.procs[r] = &remoteProcess{n: n, rank: r}
		}
	}
	n.system = actorsys.New(cfg.System...)
	// Before anything is spawned: PIDs copy the registry's address.
	n.system.ProcessRegistry.Address = n.addrs[n.rank]
	n.system.ProcessRegistry.RegisterAddressResolver(n.resolve)
	n.dec = msgpack.NewDecoder(&n.rd)

	mb, err := mailbox.New(ctx, comm, cfg.Mailbox)
	if err != nil {
		n.system.Shutdown()
		return nil, fmt.Errorf("actor: start rank %d: %w", n.rank, err)
	}
	n.mb = mb
	n.in.init(mb, cfg.MaxInbound, n.size)
	n.system.Extensions.Register(&n.in)
	// gin's notice of a lost rank, as soon as the bootstrap has it (the
	// receive loop would find out at its next poll too).
	comm.OnPeerLost(func(rank int, err error) {
		switch {
		case n.closed.Load():
		case comm.PeerFailure() == gin.FailPeer: // only that rank's actors are gone
			n.rankGone(rank, fmt.Errorf("rank %d lost: %w: %w", rank, ErrRankGone, err))
		default:
			n.commFailed(err)
		}
	})
	go n.slowLoop()
	if err := mb.Start(mailbox.Handler{Frame: n.frame, Error: n.loopError, Warm: n.warm}); err != nil {
		close(n.stop)
		n.system.Shutdown()
		return nil, fmt.Errorf("actor: start rank %d: %w", n.rank, err)
	}
	return n, nil
}

// Init joins the job the launcher (cmd/rdmarun) or a scheduler describes
// in the environment (gin.Init with cfg.Gin) and starts this rank's Node
// on it; the Node owns the Comm and closes it in Close. Collective.
func Init(ctx context.Context, cfg Config) (*Node, error) {
	size, err := gin.SizeFromEnv()
	if err != nil {
		return nil, fmt.Errorf("actor: init: %w", err)
	}
	g := ginConfig(cfg, size)
	comm, err := gin.Init(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("actor: init: %w", err)
	}
	n, err := Start(ctx, comm, cfg)
	if err != nil {
		return nil, errors.Join(err, comm.Close())
	}
	n.ownComm = true
	return n, nil
}

// StartLocal starts size Nodes whose ranks are goroutines of this process
// (gin.NewLocal with cfg.Gin), for tests, examples and single-process
// programs. Each Node owns its Comm.
func StartLocal(ctx context.Context, size int, cfg Config) ([]*Node, error) {
	comms, err := gin.NewLocal(ctx, size, ginConfig(cfg, size))
	if err != nil {
		return nil, fmt.Errorf("actor: start local: %w", err)
	}
	nodes := make([]*Node, size)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if nodes[r], errs[r] = Start(ctx, comms[r], cfg); errs[r] == nil {
				nodes[r].ownComm = true
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for r := range nodes {
			if nodes[r] != nil {
				nodes[r].Close()
			} else {
				comms[r].Close()
			}
		}
		return nil, fmt.Errorf("actor: start local: %w", err)
	}
	return nodes, nil
}

// ginConfig is cfg.Gin with enough signals for a mailbox of size ranks,
// and per-peer failure: a lost rank ends its own actors only.
func ginConfig(cfg Config, size int) gin.Config {
	g := cfg.Gin
	g.PeerFailure = gin.FailPeer
	need := int(cfg.Mailbox.SignalBase) + mailbox.SignalsNeeded(size)
	if g.Signals == 0 {
		g.Signals = max(64, need)
	} else if g.Signals < need {
		g.Signals = need
	}
	return g
}

// Rank is this node's rank.
func (n *Node) Rank() int { return n.rank }

// Size is the number of ranks.
func (n *Node) Size() int { return n.size }

// Comm is the node's communicator.
func (n *Node) Comm() *gin.Comm { return n.comm }

// Mailbox is the node's remote mailbox (for its Stats).
func (n *Node) Mailbox() *mailbox.Mailbox { return n.mb }

// System is the node's protoactor-go actor system; its EventStream carries
// UndeliverableEvent and DeadLetterEvent.
func (n *Node) System() *ActorSystem { return n.system }

// Root is the node's root context: Send, Request, RequestFuture, Spawn,
// Stop, Poison from outside an actor.
func (n *Node) Root() *RootContext { return n.system.Root }

// Spawn starts an actor with a generated name on this rank.
func (n *Node) Spawn(props *Props) *PID { return n.system.Root.Spawn(props) }

// SpawnNamed starts an actor named name on this rank, so that other ranks
// can reach it as PID(rank, name). It fails if the name is taken.
func (n *Node) SpawnNamed(props *Props, name string) (*PID, error) {
	return n.system.Root.SpawnNamed(props, name)
}

// PID is the PID of the actor named name on rank (which may be this one).
// Nothing is checked: a message to a name nobody spawned is a dead letter
// on that rank, answered with DeadLetterResponse to requests.
func (n *Node) PID(rank int, name string) *PID { return NewPID(AddressOf(rank), name) }

// Address is the PID Address of rank's actors (AddressOf).
func (n *Node) Address(rank int) string { return AddressOf(rank) }

// Barrier returns once every rank entered it (the Comm's control-plane
// barrier): spawn named actors, then Barrier, then send to them.
func (n *Node) Barrier(ctx context.Context) error { return n.comm.Barrier(ctx) }

// Tell sends msg to pid like Root().Send, but reports what a send to
// another rank meets at this rank as an error instead of an
// UndeliverableEvent: an unregistered type (ErrUnregistered), a frame too
// large (mailbox.ErrFrameTooLarge), a full ring after the mailbox's
// SendTimeout (mailbox.ErrRingFull), a rank gone (ErrRankGone,
// gin.ErrPeerLost). Delivery at the target is not confirmed.
//
// A PID that can name no actor of this job is an error at once, where
// Root().Send would drop the message silently: a nil PID, a rank outside
// the job, or an address that is neither a rank's nor this process's own
// (protoactor-go's "nonhost"), such as another transport's host:port
// (gin.ErrPeerOutOfRange).
func (n *Node) Tell(pid *PID, msg any) error {
	if pid == nil {
		return fmt.Errorf("tell: nil PID: %w", gin.ErrBadArgument)
	}
	r, ok := RankOf(pid)
	switch {
	case ok && r >= n.size:
		return fmt.Errorf("tell %s/%s: rank %d of a job of %d: %w", pid.Address, short(pid.Id), r, n.size, gin.ErrPeerOutOfRange)
	case ok && r != n.rank:
		return n.sendUser(r, pid, msg)
	case !ok && pid.Address != localAddress:
		return fmt.Errorf("tell %s/%s: the address names no rank of this job: %w", short(pid.Address), short(pid.Id), gin.ErrPeerOutOfRange)
	}
	n.system.Root.Send(pid, msg)
	return nil
}

// localAddress is the Address protoactor-go gives PIDs of a process with
// no remote (its actor package's localAddress): they are local.
const localAddress = "nonhost"

// short keeps an untrusted string to a length fit for an error line.
func short(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "..."
}

// Gone returns why rank can no longer be reached (it closed its node, was
// lost, or this rank's Comm failed), or nil.
func (n *Node) Gone(rank int) error {
	if rank < 0 || rank >= n.size {
		return fmt.Errorf("rank %d of %d: %w", rank, n.size, gin.ErrPeerOutOfRange)
	}
	if p := n.gone[rank].Load(); p != nil {
		return *p
	}
	return nil
}

// Close tells the other ranks this node leaves (their watchers of its
// actors get Terminated with TerminatedAddressTerminated, and their sends
// here fail with ErrRankGone), stops the receive loop and the actor system,
// and closes the Comm if the node owns it (Init, StartLocal). It does not
// stop the node's actors first; stop them (or Poison them) before Close if
// watchers should see TerminatedStopped. Close is local; call Barrier first
// if peers may still send. Later calls return nil.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	for r := range n.size {
		if r != n.rank && n.gone[r].Load() == nil {
			n.mb.TrySend(r, kindBye, nil) // best effort: a full ring or a lost peer only loses the notice
		}
	}
	err := n.mb.Close()
	if err == nil { // the receive loop has ended: its partial messages go
		n.dropChunks()
	}
	close(n.stop)
	n.system.Shutdown()
	if n.ownComm {
		err = errors.Join(err, n.comm.Close())
	}
	return err
}

// resolve is the node's protoactor-go AddressResolver: a PID of another
// rank resolves to that rank's handle. PIDs cache what it returns, so the
// handle is a thin one that finds the mailbox per send.
func (n *Node) resolve(pid *PID) (protoactor.Process, bool) {
	r, ok := RankOf(pid)
	if !ok || r == n.rank || r >= n.size {
		return nil, false
	}
	return n.procs[r], true
}

// slow queues f for the slow-path goroutine: deliveries from the receive
// loop that may send to other ranks and so wait for credit (dead letters
// and their answers), which the receive loop itself must never do.
func (n *Node) slow(f func()) {
	select {
	case n.slowQ <- f:
	default:
		n.logs.warn(n.system, "slow-path queue full; a dead-letter delivery was dropped", "queue", cap(n.slowQ))
	}
}

func (n *Node) slowLoop() {
	for {
		select {
		case f := <-n.slowQ:
			f()
		case <-n.stop:
			return
		}
	}
}
