package remote

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	protoremote "github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/rdmactor/rdmactor/internal/actorsys"
	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// start starts the actor system, the remote and this rank's actors.
func (b *remoteBootstrap) start() error {
	b.system = actorsys.New(actor.WithLoggerFactory(newLogger))
	host, port := b.cfg.Host, 0
	var opts []protoremote.ConfigOption
	if b.cfg.Rank == 0 {
		h, p, _ := net.SplitHostPort(b.cfg.Addr)
		host = h
		port, _ = strconv.Atoi(p)
		// Peers name rank 0 by Addr exactly: advertise it so their PIDs are local here.
		opts = append(opts, protoremote.WithAdvertisedHost(b.cfg.Addr))
	}
	server := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(math.MaxInt32),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepaliveTime / 2, PermitWithoutStream: true}),
	}
	creds := insecure.NewCredentials()
	if wantTLS(b.cfg) {
		tc, err := jobTLS(b.cfg.Secret, b.cfg.Job)
		if err != nil {
			return err
		}
		creds = credentials.NewTLS(tc)
		server = append(server, grpc.Creds(creds))
	}
	opts = append(opts,
		// The control plane's queues hold a few messages; protoactor-go
		// preallocates 1,000,000 slots (16 MiB) per peer by default, which
		// grew rank 0's heap by 16 MiB per rank. The ring grows if needed.
		protoremote.WithEndpointWriterQueueSize(256),
		protoremote.WithServerOptions(server...),
		protoremote.WithDialOptions(
			grpc.WithTransportCredentials(creds),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: keepaliveTime, Timeout: keepaliveTime, PermitWithoutStream: true}),
		),
	)
	rcfg := protoremote.Configure(host, port, opts...)
	// One connection attempt, not 5 two seconds apart: a rank whose
	// connection cannot be made is reported lost 2 s later, not 10 s (every
	// peer's port is known to accept before the first attempt: rank 0's
	// through waitReachable, the others' since they listen before joining).
	rcfg.MaxRetryCount = 1
	r := protoremote.NewRemote(b.system, rcfg)
	if err := startRemote(r); err != nil {
		return fmt.Errorf("bootstrap: rank %d: start control endpoint on %s: %w", b.cfg.Rank, net.JoinHostPort(host, strconv.Itoa(port)), err)
	}
	b.remote = r

	if b.cfg.Rank == 0 {
		b.coord = newCoordinator(b.cfg.Size, newSealer(b.key, 0, &b.ctr))
		if err := b.spawn(coordinatorName, b.coord); err != nil {
			return err
		}
	}
	if err := b.spawn(rankActorName, &rankActor{b: b}); err != nil {
		return err
	}
	b.sub = b.system.EventStream.Subscribe(b.onEvent)
	return nil
}

// startRemote starts r, turning its panic (listen failure) into an error.
func startRemote(r *protoremote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}

func (b *remoteBootstrap) spawn(name string, a actor.Actor) error {
	pid, err := b.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return a }), name)
	if err != nil {
		return fmt.Errorf("bootstrap: spawn %s: %w", name, err)
	}
	b.local = append(b.local, pid)
	return nil
}

// onEvent runs in the publisher's goroutine: forward lost connections to the
// actor that handles them.
func (b *remoteBootstrap) onEvent(evt any) {
	e, ok := evt.(*protoremote.EndpointTerminatedEvent)
	if !ok {
		return
	}
	to := b.local[len(b.local)-1] // the rank actor
	if b.cfg.Rank == 0 {
		to = b.local[0] // the coordinator
	}
	b.system.Root.Send(to, &endpointDown{addr: e.Address})
}

// join admits this rank and waits for all ranks' addresses.
func (b *remoteBootstrap) join(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	if b.cfg.Rank != 0 {
		if err := waitReachable(ctx, b.cfg.Addr); err != nil {
			return fmt.Errorf("rank 0 not reachable: %w", err)
		}
	}
	msg := b.out.seal(kindJoin, &join{Rank: b.cfg.Rank, Addr: b.system.Address()})
	t := time.NewTicker(joinRetry)
	defer t.Stop()
	for !b.joined.fired() {
		b.system.Root.Send(b.coordPID, msg)
		select {
		case <-b.joined.c:
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("no answer from rank 0: %w", ctx.Err())
		}
	}
	select {
	case <-b.welcomed.c:
		return nil
	case <-b.Lost():
		return b.Err()
	case <-ctx.Done():
		if b.coord != nil {
			return fmt.Errorf("%s did not join: %w", rankList(b.coord.missing()), ctx.Err())
		}
		return fmt.Errorf("waiting for all %d ranks to join: %w", b.cfg.Size, ctx.Err())
	}
}

// waitReachable waits until addr accepts TCP connections, so that
// protoactor-go's first connection attempt does not fail (it would retry
// only after seconds).
func waitReachable(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(dialRetry):
		}
	}
}

// rank0Down handles the loss of the connection to rank 0 (ranks other than 0).
func (b *remoteBootstrap) rank0Down() {
	if !b.joined.fired() {
		return // protoactor-go retries the connection; join resends
	}
	b.rank0Gone.fire()
	b.mu.Lock()
	closing, left := b.closing, b.rank0Left
	b.mu.Unlock()
	if closing {
		return
	}
	// Shrinks agree at rank 0's coordinator: none can any more. Aborted
	// first, so that whoever learns of the loss and shrinks meets this.
	b.fam.Abort(bootstrap.ErrRankZeroLost)
	defer b.watchPeers()
	if left {
		// The coordinator is gone: no collective can complete any more.
		b.NoteLeft(0, 0)
		b.fam.Each(0, func(s *bootstrap.Sub, r int) {
			if r >= 0 {
				s.NoteLeft(r, 0)
			}
		})
		return
	}
	b.Lose(&rdma.PeerLostError{Rank: 0, Reason: reasonConnClosed})
	b.fam.Lose(0, reasonConnClosed)
}

// rankList names ranks for an error line: all of them when few, else the
// count and the first few, so that a job of 100 000 missing ranks still
// gets a line that fits a terminal.
func rankList(rs []int) string {
	const most = 8
	if len(rs) <= most {
		return fmt.Sprintf("ranks %v", rs)
	}
	return fmt.Sprintf("%d ranks (%v ...)", len(rs), rs[:most])
}
