package remote

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	protoremote "github.com/asynkron/protoactor-go/remote"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Name is the name this package registers its Bootstrap under
// (bootstrap.Register), for gin.Init and bootstrap.FromEnv.
const Name = "protoactor-remote"

func init() { bootstrap.Register(Name, FromEnv) }

// FromEnv joins the job described by the environment
// (bootstrap.ConfigFromEnv) through New. A missing or malformed variable is
// an error naming it; other errors are New's.
func FromEnv(ctx context.Context) (bootstrap.Bootstrap, error) {
	cfg, err := bootstrap.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	return New(ctx, Config{Config: cfg})
}

// ActorSystemer is implemented by the Bootstrap that New and FromEnv
// return: it exposes the protoactor-go actor system and remote of the
// control plane so that other layers can reuse them (spawn their own
// actors, send to other ranks). They stop working at Close.
type ActorSystemer interface {
	// ActorSystem is the rank's actor system.
	ActorSystem() *actor.ActorSystem
	// Remote is the started remote of ActorSystem.
	Remote() *protoremote.Remote
}

// Timeouts of the remote control plane.
const (
	// DefaultConnectTimeout bounds New's wait for all ranks to join when
	// Config.ConnectTimeout is 0.
	DefaultConnectTimeout = 60 * time.Second

	joinRetry     = 500 * time.Millisecond // resend join until acknowledged
	dialRetry     = 50 * time.Millisecond  // probe rank 0's port until it accepts
	keepaliveTime = 10 * time.Second       // gRPC pings on idle connections (dead hosts)

	// CloseLimit bounds Close: what it waits for (below) and the shutdown
	// after it, which takes a few ms, with room for a loaded host.
	CloseLimit = time.Second
	leaveWait  = 400 * time.Millisecond // rank != 0: wait for the leave acknowledgments
	drainWait  = 600 * time.Millisecond // rank 0: wait for the others to learn it leaves
	stopWait   = 100 * time.Millisecond // wait for this rank's actors to stop
)

// remoteBootstrap is the Bootstrap of New: the shared RankState, carried by
// protoactor-go remote.
type remoteBootstrap struct {
	*bootstrap.RankState
	cfg    Config
	system *actor.ActorSystem
	remote *protoremote.Remote
	sub    *eventstream.Subscription

	coordPID *actor.PID   // rank 0's coordinator
	local    []*actor.PID // actors this rank spawned
	coord    *coordinator // rank 0 only
	fam      *bootstrap.Family

	// key is the job's MAC key (sealKey); ctr numbers the messages this
	// rank seals; out seals them, in opens the rank actor's.
	key     []byte
	ctr     atomic.Uint64
	out, in *sealer

	joined, welcomed, leaveAcked, rank0Gone signal

	mu        sync.Mutex
	addrs     []string // every rank's actor address, from welcome
	rank0Left bool     // rank 0 said it leaves
	released  bool     // Close was called (the control plane may live on for shrunk Bootstraps)
	closing   bool
	gone      map[int]bool // ranks the coordinator reported lost or left
	peers     *peerWatch   // since rank 0 went: the ranks this one watches itself

	closeOnce sync.Once
	closeErr  error
}

var (
	_ ActorSystemer      = (*remoteBootstrap)(nil)
	_ bootstrap.Shrinker = (*remoteBootstrap)(nil)
)

// New joins the job described by cfg over protoactor-go remote (see
// the package doc) and returns once every rank has joined. ctx and
// cfg.ConnectTimeout bound only the join. It returns an error when cfg is
// invalid, when rank 0 cannot listen on cfg.Addr, when the join times out
// (naming the missing ranks on rank 0), or a *rdma.PeerLostError when a
// rank is lost during the join.
//
// Run one New per process (a rank per process): protoactor-go's
// Remote.Start replaces grpc's global logger (grpclog.SetLoggerV2), which the
// race detector reports as a race with any other remote of the process that
// has traffic. Ranks as goroutines of one process use bootstrap.NewLocal.
func New(ctx context.Context, cfg Config) (bootstrap.Bootstrap, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &remoteBootstrap{
		key:        sealKey(cfg.Secret, cfg.Job),
		cfg:        cfg,
		joined:     newSignal(),
		welcomed:   newSignal(),
		leaveAcked: newSignal(),
		rank0Gone:  newSignal(),
		coordPID:   actor.NewPID(cfg.Addr, coordinatorName),
		gone:       map[int]bool{},
	}
	b.RankState = bootstrap.NewRankState(cfg.Rank, cfg.Size, cfg.Job, b.contribute)
	b.fam = bootstrap.NewFamily(cfg.Rank, cfg.Size, cfg.Job, sender{b}, b.close)
	b.out, b.in = newSealer(b.key, cfg.Rank, &b.ctr), newSealer(b.key, cfg.Rank, &b.ctr)
	if err := b.start(); err != nil {
		b.shutdown()
		return nil, err
	}
	if err := b.join(ctx); err != nil {
		b.shutdown()
		return nil, fmt.Errorf("bootstrap: rank %d of %d: join %s: %w", cfg.Rank, cfg.Size, cfg.Addr, err)
	}
	return b, nil
}

// ActorSystem returns the control plane's actor system.
func (b *remoteBootstrap) ActorSystem() *actor.ActorSystem { return b.system }

// Remote returns the control plane's started remote.
func (b *remoteBootstrap) Remote() *protoremote.Remote { return b.remote }

// Addrs returns every rank's control address, indexed by rank.
func (b *remoteBootstrap) Addrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.addrs...)
}

// contribute sends this rank's data for collective seq to the coordinator.
func (b *remoteBootstrap) contribute(seq uint64, data []byte) {
	b.system.Root.Send(b.coordPID, b.out.seal(kindContrib, &contrib{Seq: seq, Rank: b.cfg.Rank, Data: data}))
}

// Shrink: see bootstrap.Shrinker. The survivors agree, and the shrunk
// Bootstrap's collectives complete, at rank 0's coordinator, over this
// Bootstrap's connections: it fails with bootstrap.ErrRankZeroLost when
// rank 0 is lost (or named in lost), or leaves before the agreement.
func (b *remoteBootstrap) Shrink(ctx context.Context, lost []int) (bootstrap.Bootstrap, error) {
	if b.closedNow() {
		return nil, fmt.Errorf("bootstrap: shrink: %w", rdma.ErrClosed)
	}
	for _, l := range lost {
		if l == 0 {
			return nil, fmt.Errorf("bootstrap: shrink: %w", bootstrap.ErrRankZeroLost)
		}
	}
	return b.fam.ShrinkWorld(ctx, lost)
}

// closedNow reports whether Close was called.
func (b *remoteBootstrap) closedNow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.released
}

// sender carries the Shrink messages of a rank (bootstrap.Sender) to the
// coordinator.
type sender struct{ b *remoteBootstrap }

func (s sender) Agree(parent string, k int, lost []int) {
	s.b.system.Root.Send(s.b.coordPID, s.b.out.seal(kindShrink, &shrinkMsg{Parent: parent, K: k, Rank: s.b.cfg.Rank, Lost: lost}))
}

func (s sender) Contribute(group string, seq uint64, data []byte) {
	s.b.system.Root.Send(s.b.coordPID, s.b.out.seal(kindGroupContrib, &groupContrib{Group: group, Seq: seq, Rank: s.b.cfg.Rank, Data: data}))
}

func (s sender) Leave(group string, seq uint64) {
	s.b.system.Root.Send(s.b.coordPID, s.b.out.seal(kindGroupLeaving, &groupLeaving{Group: group, Rank: s.b.cfg.Rank, Seq: seq}))
}
