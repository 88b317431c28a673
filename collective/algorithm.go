package collective

// Collective names a collective operation, for Comm.Algorithm.
type Collective uint8

const (
	AllReduceOp     Collective = iota // Comm.AllReduce
	AllGatherOp                       // Comm.AllGather
	ReduceScatterOp                   // Comm.ReduceScatter
	BroadcastOp                       // Comm.Broadcast
	AllToAllOp                        // Comm.AllToAll
	AllToAllVOp                       // Comm.AllToAllV
)

// String is the collective's name as the examples print it ("allreduce").
func (k Collective) String() string {
	return [...]string{"allreduce", "allgather", "reducescatter", "broadcast", "alltoall", "alltoallv", "?"}[min(int(k), 6)]
}

// Algorithm is how a collective moves its data.
type Algorithm uint8

const (
	// Local: one rank, a copy (or nothing).
	Local Algorithm = iota
	// OneShot: every rank puts its data into every peer's scratch half of
	// the epoch in one step; one latency, (n-1)x the data per rank. No
	// handshake: scratch halves alternate by epoch.
	OneShot
	// Ring: reduce-scatter around the ring through scratch, then (for
	// AllReduce) all-gather around the ring straight into the peers'
	// destinations, both pipelined in Config.Piece puts; 2(n-1)/n of the
	// data per rank, 2(n-1) latencies (Patarasuk and Yuan 2009; NCCL's
	// ring).
	Ring
	// Direct: every rank tells each peer it entered the call, then puts
	// straight into the destinations of the peers that did; no scratch
	// copy, one more latency.
	Direct
	// Chain: Broadcast down the chain root, root+1, ... pipelined in
	// Config.Piece puts, after every rank told the root it entered.
	Chain
	// TwoShot: every rank puts chunk p of its data into p's scratch, p
	// reduces it (rank order) and puts the result straight into every
	// peer's destination; pipelined in Config.Piece puts. The data of a
	// ring in 2 steps instead of 2(n-1), n-1 messages at once per rank.
	TwoShot
	// Hierarchical: a OneShot in three steps for ranks in groups (one
	// group per host, Config.HostRanks), for AllReduce, AllGather and
	// ReduceScatter (whose leaders exchange only each group's blocks):
	// each rank puts its data into its group leader's scratch, the
	// leaders exchange their groups' reductions (AllGather: their groups'
	// blocks), and each leader puts the result into its members'
	// destinations. Three latencies, two of them within a host, and one
	// message per pair of leaders across hosts instead of one per pair of
	// ranks (NCCL's and MPI's hierarchical collectives). Broadcast: Direct
	// through one forwarder per group.
	Hierarchical
)

// String is the algorithm's name as the examples print it ("twoshot").
func (a Algorithm) String() string {
	return [...]string{"local", "oneshot", "ring", "direct", "chain", "twoshot", "hierarchical", "?"}[min(int(a), 7)]
}

// Algorithm is the algorithm a call of collective k with count elements
// of dt (per rank; per pair for AllToAll; the largest per-pair count for
// AllToAllV) takes on this Comm. Every rank picks the same.
func (c *Comm) Algorithm(k Collective, count int, dt DataType) Algorithm {
	return c.choose(k, count*dt.Size())
}

// choose picks by message size in bytes: per rank for AllReduce, the
// source block for AllGather, the destination block for ReduceScatter,
// the broadcast size, the per-pair block for AllToAll.
func (c *Comm) choose(k Collective, bytes int) Algorithm {
	if c.n == 1 {
		return Local
	}
	small := bytes <= c.cfg.OneShotMax
	fits := bytes <= c.cfg.Scratch/c.n
	hier := c.group > 0 && bytes <= c.cfg.HierarchicalMax
	switch k {
	case AllReduceOp, ReduceScatterOp:
		switch {
		case hier && fits && k == AllReduceOp,
			hier && k == ReduceScatterOp && (c.group+1)*c.n*bytes <= c.cfg.Scratch:
			return Hierarchical
		case small && fits:
			return OneShot
		case c.n <= c.cfg.RingRanks:
			return TwoShot
		}
		return Ring
	case BroadcastOp:
		switch {
		case small && hier:
			return Hierarchical
		case small || c.n == 2:
			return Direct
		}
		return Chain
	case AllToAllVOp:
		return Direct
	default: // AllGather, AllToAll
		switch {
		case hier && fits && k == AllGatherOp:
			return Hierarchical
		case small && fits:
			return OneShot
		}
		return Direct
	}
}
