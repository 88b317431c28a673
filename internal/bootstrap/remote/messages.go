package remote

// Messages of the remote control plane. On the wire each is a
// wrapperspb.BytesValue (a protobuf type protoactor-go's serializer finds in
// protoregistry.GlobalTypes) holding a sealed message (seal.go): a kind
// byte, the sender and a counter, the msgpack encoding of the struct named
// for the kind, and a tag.
type kind uint8

const (
	kindJoin     kind = iota + 1 // join: rank -> coordinator, repeated until kindJoinAck
	kindJoinAck                  // ack: coordinator -> rank
	kindWelcome                  // welcome: coordinator -> every rank once all joined
	kindContrib                  // contrib: rank -> coordinator, one per collective
	kindGathered                 // gathered: coordinator -> every rank once a collective is complete
	kindLost                     // lost: coordinator -> every rank
	kindLeaving                  // leaving: rank -> coordinator, from Close
	kindLeaveAck                 // ack: coordinator -> the leaving rank
	kindLeft                     // leaving: coordinator -> the other ranks
	kindLeftAck                  // ack: rank -> coordinator, answer to kindLeft of rank 0

	// Shrink (bootstrap.Shrinker) and the collectives of shrunk groups.
	kindShrink        // shrinkMsg: rank -> coordinator, its part of an agreement
	kindAgreed        // bootstrap.Agreed: coordinator -> each rank that joined the agreement
	kindGroupContrib  // groupContrib: rank -> coordinator
	kindGroupGathered // groupGathered: coordinator -> the group's live members
	kindGroupLeaving  // groupLeaving: rank -> coordinator, from a shrunk Bootstrap's Close
	kindGroupLeft     // groupLeaving: coordinator -> the group's other members

	// Once rank 0 is gone (lost or left), the ranks watch each other.
	kindPeerWatch    // ack: rank -> every other rank, opening the connection whose loss tells the rank's
	kindPeerLeaving  // leaving: rank -> the ranks watching it, from Close
	kindPeerLeaveAck // ack: a watching rank -> the leaving rank
)

// join asks the coordinator to admit Rank, whose rank actor is at Addr.
type join struct {
	Rank int    `msgpack:"r"`
	Addr string `msgpack:"a"`
}

// ack acknowledges a join, a leaving, or a leaving of rank 0, from Rank;
// or opens a watch of Rank's peer (kindPeerWatch).
type ack struct {
	Rank int `msgpack:"r"`
}

// welcome gives every rank's control address, indexed by rank.
type welcome struct {
	Addrs []string `msgpack:"a"`
}

// contrib is Rank's data for collective Seq.
type contrib struct {
	Seq  uint64 `msgpack:"s"`
	Rank int    `msgpack:"r"`
	Data []byte `msgpack:"d"`
}

// gathered is the result of collective Seq: all ranks' data by rank.
type gathered struct {
	Seq  uint64   `msgpack:"s"`
	Data [][]byte `msgpack:"d"`
}

// lost reports that Rank is lost, and why.
type lost struct {
	Rank   int    `msgpack:"r"`
	Reason string `msgpack:"w"`
}

// leaving says Rank leaves cleanly; Seq is the last collective it joined.
type leaving struct {
	Rank int    `msgpack:"r"`
	Seq  uint64 `msgpack:"s"`
}

// shrinkMsg is Rank's part of the K-th Shrink of group Parent: the world
// ranks it counts lost.
type shrinkMsg struct {
	Parent string `msgpack:"p"`
	K      int    `msgpack:"k"`
	Rank   int    `msgpack:"r"`
	Lost   []int  `msgpack:"l"`
}

// groupContrib is world rank Rank's data for collective Seq of Group.
type groupContrib struct {
	Group string `msgpack:"g"`
	Seq   uint64 `msgpack:"s"`
	Rank  int    `msgpack:"r"`
	Data  []byte `msgpack:"d"`
}

// groupGathered is the result of collective Seq of Group, by group rank.
type groupGathered struct {
	Group string   `msgpack:"g"`
	Seq   uint64   `msgpack:"s"`
	Data  [][]byte `msgpack:"d"`
}

// groupLeaving says world rank Rank closed its Bootstrap of Group after
// collective Seq.
type groupLeaving struct {
	Group string `msgpack:"g"`
	Rank  int    `msgpack:"r"`
	Seq   uint64 `msgpack:"s"`
}
