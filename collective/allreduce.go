package collective

import (
	"context"
	"fmt"
)

// AllReduce sets count elements of dt at dst, on every rank, to the
// element-wise reduction by op of the count elements at src of every rank
// (ncclAllReduce, nccl.h; MPI_Allreduce). dst may be src (in place). Every
// rank gets bit-identical results: a one-shot reduces in rank order on
// every rank, a two-shot or ring reduces each chunk once and distributes
// it. Float results are rounded differently from a sequential sum, as in
// NCCL.
//
// Algorithm (Comm.Algorithm): Hierarchical up to Config.HierarchicalMax
// bytes where the ranks span hosts, several on each (Config.HostRanks);
// otherwise OneShot up to Config.OneShotMax bytes, and above, TwoShot on
// up to Config.RingRanks ranks, Ring on more. In place, a peer overwrites a part of dst only once it holds
// this rank's contribution to it, which this rank has then read. Collective; see Comm
// for the caller's duties. count 0 returns at once.
//
// Errors: ErrBadArgument (also gin.ErrOutOfBounds) for bad arguments,
// ErrNotSupported for Float16/Bfloat16, before anything is sent; then the
// context's error (a wait that ended), gin's errors (gin.ErrPeerLost), and
// ErrBroken on every later call once one failed midway.
func (c *Comm) AllReduce(ctx context.Context, dst, src Buffer, count int, dt DataType, op Op) error {
	const name = "all-reduce"
	if err := checkReduce(name, dt, op); err != nil {
		return err
	}
	if err := checkBuffers(name, dst, count, src, count, dt); err != nil {
		return err
	}
	if ok, err := c.startCount(name, count); !ok {
		return err
	}
	var err error
	n := count * dt.Size()
	switch alg := c.choose(AllReduceOp, n); alg {
	case Local:
		copy(dst.bytes(n), src.bytes(n))
	case OneShot:
		err = c.allReduceOneShot(ctx, dst, src, count, dt, op)
	case Hierarchical:
		err = c.allReduceHierarchical(ctx, dst, src, count, dt, op)
	default:
		err = c.reduceSlices(ctx, alg, &reducePlan{dt: dt, op: op, src: src, dst: dst, allReduce: true, gather: true}, count)
	}
	return c.finish(ctx, name, err)
}

// allReduceOneShot: every rank copies its data into its own slot of the
// epoch's scratch half and puts it into the same slot of every peer; then
// each rank reduces slots 0..n-1 in rank order into dst.
func (c *Comm) allReduceOneShot(ctx context.Context, dst, src Buffer, count int, dt DataType, op Op) error {
	b := count * dt.Size()
	h := c.begin()
	at := func(r int) int { return h + r*b }
	copy(c.scratchBytes(at(c.me), b), src.bytes(b))
	for i := 1; i < c.n; i++ {
		if err := c.put(c.peer(i), c.scratch, at(c.me), c.scratch, at(c.me), b); err != nil {
			return err
		}
	}
	return c.reduceSlots(ctx, dst.bytes(b), at, b, dt, op)
}

// reduceSlots waits for each peer's slot of b bytes at at(r) and reduces
// the slots in rank order into out (n >= 2).
func (c *Comm) reduceSlots(ctx context.Context, out []byte, at func(r int) int, b int, dt DataType, op Op) error {
	for r := range c.n {
		if r != c.me {
			if err := c.await(ctx, r, 1); err != nil {
				return err
			}
		}
		switch {
		case r == 1:
			reduce(dt, op, out, c.scratchBytes(at(0), b), c.scratchBytes(at(1), b))
		case r > 1:
			reduce(dt, op, out, out, c.scratchBytes(at(r), b))
		}
	}
	return nil
}

// checkReduce validates a reduction's type and operator.
func checkReduce(name string, dt DataType, op Op) error {
	switch {
	case dt.Size() == 0:
		return fmt.Errorf("%s: data type %v: %w", name, dt, ErrBadArgument)
	case !dt.Reducible():
		return fmt.Errorf("%s: reduction of %v: %w", name, dt, ErrNotSupported)
	case op >= numOps:
		return fmt.Errorf("%s: operator %v: %w", name, op, ErrBadArgument)
	}
	return nil
}

// checkBuffers validates a destination of dn and a source of sn elements.
func checkBuffers(name string, dst Buffer, dn int, src Buffer, sn int, dt DataType) error {
	if err := src.check(name, "source", sn, dt); err != nil {
		return err
	}
	return dst.check(name, "destination", dn, dt)
}
