package main

import (
	"time"

	"github.com/rdmactor/rdmactor/actor"
)

// Payload is the benchmark message on rdmactor: a sequence number and
// -size bytes, encoded by msgpack's reflection. The anchor sends the same
// bytes as a protobuf wrapperspb.BytesValue.
type Payload struct {
	Seq  uint64
	Data []byte
}

// Control messages, rank 0 to the others, over rdmactor.
type (
	// AnchorAddrRequest asks a rank for the address of its protoactor-go
	// remote (the anchor); answered with AnchorAddr.
	AnchorAddrRequest struct{}
	// AnchorAddr is a rank's anchor address, host:port.
	AnchorAddr struct{ Addr string }
	// Blast tells a rank to send N messages of Size bytes to the sink at
	// SinkAddr (a PID address of the named transport) as fast as it can.
	Blast struct {
		Transport string
		SinkAddr  string
		N, Size   int
	}
	// CPURequest asks a rank for the CPU time its process used so far,
	// once its blasts have ended; answered with CPU.
	CPURequest struct{}
	// CPU is a process's user+system CPU time.
	CPU struct{ Used time.Duration }
	// IdleProbe asks a rank for the CPU time its process uses over Window
	// starting Settle from now, a span in which no message crosses; answered
	// with CPU once the window has passed.
	IdleProbe struct{ Settle, Window time.Duration }
	// Finish tells a rank that rank 0 is done.
	Finish struct{}
	// Ack answers a control message that needs no other answer.
	Ack struct{}
)

func init() {
	actor.RegisterMessage[Payload]()
	actor.RegisterMessage[PayloadCodec]()
	actor.RegisterMessage[AnchorAddrRequest]()
	actor.RegisterMessage[AnchorAddr]()
	actor.RegisterMessage[Blast]()
	actor.RegisterMessage[CPURequest]()
	actor.RegisterMessage[CPU]()
	actor.RegisterMessage[IdleProbe]()
	actor.RegisterMessage[Finish]()
	actor.RegisterMessage[Ack]()
	actor.RegisterMessage[Mesh]()
	actor.RegisterMessage[MeshResult]()
}
