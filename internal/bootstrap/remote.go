package bootstrap

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Timeouts of the remote control plane.
const (
	// DefaultConnectTimeout bounds NewRemote's wait for all ranks to join
	// when RemoteConfig.ConnectTimeout is 0.
	DefaultConnectTimeout = 60 * time.Second

	joinRetry     = 500 * time.Millisecond // resend join until acknowledged
	dialRetry     = 50 * time.Millisecond  // probe rank 0's port until it accepts
	leaveWait     = 2 * time.Second        // rank != 0: wait for the leave acknowledgment
	drainWait     = 5 * time.Second        // rank 0: wait for the others to learn it leaves
	keepaliveTime = 10 * time.Second       // gRPC pings on idle connections (dead hosts)
)

// remoteBootstrap is the Bootstrap of NewRemote.
type remoteBootstrap struct {
	cfg    RemoteConfig
	st     *rankState
	system *actor.ActorSystem
	remote *remote.Remote
	sub    *eventstream.Subscription

	coordPID *actor.PID   // rank 0's coordinator
	local    []*actor.PID // actors this rank spawned
	coord    *coordinator // rank 0 only

	// key is the job's MAC key (sealKey); ctr numbers the messages this
	// rank seals; out seals them, in opens the rank actor's.
	key     []byte
	ctr     atomic.Uint64
	out, in *sealer

	joined, welcomed, leaveAcked, rank0Gone signal

	mu        sync.Mutex
	addrs     []string // every rank's actor address, from welcome
	rank0Left bool     // rank 0 said it leaves
	closing   bool

	closeOnce sync.Once
	closeErr  error
}

var _ ActorSystemer = (*remoteBootstrap)(nil)

// NewRemote joins the job described by cfg over protoactor-go remote (see
// the package doc) and returns once every rank has joined. ctx and
// cfg.ConnectTimeout bound only the join. It returns an error when cfg is
// invalid, when rank 0 cannot listen on cfg.Addr, when the join times out
// (naming the missing ranks on rank 0), or a *rdma.PeerLostError when a
// rank is lost during the join.
//
// Run one NewRemote per process (a rank per process): protoactor-go's
// Remote.Start replaces grpc's global logger (grpclog.SetLoggerV2), which the
// race detector reports as a race with any other remote of the process that
// has traffic. Ranks as goroutines of one process use NewLocal.
func NewRemote(ctx context.Context, cfg RemoteConfig) (Bootstrap, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	b := &remoteBootstrap{
		key:        sealKey(cfg.Secret, cfg.Job),
		cfg:        cfg,
		st:         newRankState(cfg.Rank, cfg.Size),
		joined:     newSignal(),
		welcomed:   newSignal(),
		leaveAcked: newSignal(),
		rank0Gone:  newSignal(),
		coordPID:   actor.NewPID(cfg.Addr, coordinatorName),
	}
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

// Rank returns this rank's world rank.
func (b *remoteBootstrap) Rank() int { return b.cfg.Rank }

// Size returns the number of ranks.
func (b *remoteBootstrap) Size() int { return b.cfg.Size }

// Job returns the job name.
func (b *remoteBootstrap) Job() string { return b.cfg.Job }

// ActorSystem returns the control plane's actor system.
func (b *remoteBootstrap) ActorSystem() *actor.ActorSystem { return b.system }

// Remote returns the control plane's started remote.
func (b *remoteBootstrap) Remote() *remote.Remote { return b.remote }

// Addrs returns every rank's control address, indexed by rank.
func (b *remoteBootstrap) Addrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.addrs...)
}

// AllGather: see Bootstrap.
func (b *remoteBootstrap) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	b.st.coll.Lock()
	defer b.st.coll.Unlock()
	seq, ch, err := b.st.begin()
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	b.system.Root.Send(b.coordPID, b.out.seal(kindContrib, &contrib{Seq: seq, Rank: b.cfg.Rank, Data: data}))
	res, err := b.st.wait(ctx, seq, ch)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: allgather: %w", err)
	}
	return res, nil
}

// Barrier: see Bootstrap.
func (b *remoteBootstrap) Barrier(ctx context.Context) error {
	_, err := b.AllGather(ctx, nil)
	return err
}

// OnLost: see Bootstrap.
func (b *remoteBootstrap) OnLost(f func(*rdma.PeerLostError)) { b.st.OnLost(f) }

// Err: see Bootstrap.
func (b *remoteBootstrap) Err() error { return b.st.Err() }
