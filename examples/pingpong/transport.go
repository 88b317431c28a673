package main

import (
	"fmt"
	"math"
	"net"

	protoactor "github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/internal/actorsys"
)

// transport is one way for this rank's actors to reach other ranks:
// rdmactor's node, or the anchor, protoactor-go's own remote (gRPC over
// loopback). The benchmark runs the same actors on both.
type transport struct {
	name   string
	system *actor.ActorSystem
	addrs  []string           // PID address of each rank's actors (rank 0 fills it in)
	msg    func(size int) any // a benchmark message of size bytes
	sink   *sink              // rank 0
	pinger *actor.PID         // rank 0
}

func (t *transport) pid(rank int, name string) *actor.PID { return actor.NewPID(t.addrs[rank], name) }

// spawn starts the transport's actors: pong everywhere, sink and pinger on
// rank 0. Transports that share a system (rdmactor and rdmactor+codec)
// share them too.
func (t *transport) spawn(rank int, shared *transport) error {
	if shared != nil {
		t.sink, t.pinger = shared.sink, shared.pinger
		return nil
	}
	root := t.system.Root
	if _, err := root.SpawnNamed(actor.PropsFromFunc(pong), "pong"); err != nil {
		return fmt.Errorf("%s: spawn pong: %w", t.name, err)
	}
	if rank != 0 {
		return nil
	}
	t.sink = &sink{}
	if _, err := root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return t.sink }), "sink"); err != nil {
		return fmt.Errorf("%s: spawn sink: %w", t.name, err)
	}
	t.pinger = root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &pinger{} }))
	return nil
}

// rdmactorTransport is the node's own system; messages are msgpack by
// reflection (Payload), or with codec through PayloadCodec's methods. Both
// share the node: they differ in the message type only.
func rdmactorTransport(n *actor.Node, codec bool) *transport {
	t := &transport{name: "rdmactor", system: n.System(), addrs: make([]string, n.Size())}
	for r := range t.addrs {
		t.addrs[r] = n.Address(r)
	}
	t.msg = func(size int) any { return &Payload{Data: make([]byte, size)} }
	if codec {
		t.name = "rdmactor+codec"
		t.msg = func(size int) any { return &PayloadCodec{Data: make([]byte, size)} }
	}
	return t
}

// protoremoteTransport starts the anchor: a second actor system in this
// process with protoactor-go's remote listening on a free port of host,
// configured as the bootstrap configures its own (unlimited message size);
// messages are protobuf wrapperspb.BytesValue. Rank 0 learns the other
// ranks' addresses over rdmactor.
func protoremoteTransport(host string, size int) (*transport, error) {
	system := protoactor.NewActorSystem(protoactor.WithLoggerFactory(actorsys.Logger))
	r := remote.NewRemote(system, remote.Configure(host, 0,
		remote.WithServerOptions(grpc.MaxRecvMsgSize(math.MaxInt32)),
		remote.WithDialOptions(grpc.WithTransportCredentials(insecure.NewCredentials()))))
	if err := startRemote(r); err != nil {
		return nil, fmt.Errorf("anchor: start protoactor-go remote: %w", err)
	}
	if _, port, err := net.SplitHostPort(system.Address()); err != nil || port == "0" {
		return nil, fmt.Errorf("anchor: remote address %q", system.Address())
	}
	t := &transport{name: "protoremote", system: system, addrs: make([]string, size)}
	t.msg = func(size int) any { return &wrapperspb.BytesValue{Value: make([]byte, size)} }
	return t, nil
}

// startRemote starts r, turning its panic (listen failure) into an error.
func startRemote(r *remote.Remote) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	r.Start()
	return nil
}
