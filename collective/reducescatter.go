package collective

import "context"

// ReduceScatter sets the count elements of dt at dst of rank r to the
// element-wise reduction by op of block r (elements r*count ...
// r*count+count-1) of src over every rank (ncclReduceScatter;
// MPI_Reduce_scatter_block). src holds Size()*count elements; dst may be
// this rank's block of src (in place).
//
// Algorithm: Hierarchical up to Config.HierarchicalMax bytes per block
// where the ranks span hosts, several on each (Config.HostRanks), and a
// leader's group fits a scratch half ((group+1)*size blocks); otherwise
// OneShot (every rank puts block p of its src into p's scratch; p reduces
// in rank order) up to Config.OneShotMax bytes per block; above, the
// reduce-scatter half of AllReduce's TwoShot (up to Config.RingRanks
// ranks) or Ring. Errors as AllReduce.
func (c *Comm) ReduceScatter(ctx context.Context, dst, src Buffer, count int, dt DataType, op Op) error {
	const name = "reduce-scatter"
	if err := checkReduce(name, dt, op); err != nil {
		return err
	}
	if err := checkBuffers(name, dst, count, src, c.n*count, dt); err != nil {
		return err
	}
	if ok, err := c.startCount(name, count); !ok {
		return err
	}
	b := count * dt.Size()
	var err error
	switch alg := c.choose(ReduceScatterOp, b); alg {
	case Local:
		copy(dst.bytes(b), src.bytes(b))
	case OneShot:
		h := c.begin()
		at := func(r int) int { return h + r*b }
		copy(c.scratchBytes(at(c.me), b), src.Window.Bytes()[src.Offset+c.me*b:][:b])
		err = c.scatterSlots(h, b, func(p int) Buffer { return Buffer{src.Window, src.Offset + p*b} })
		if err == nil {
			err = c.reduceSlots(ctx, dst.bytes(b), at, b, dt, op)
		}
	case Hierarchical:
		err = c.reduceScatterHierarchical(ctx, dst, src, count, dt, op)
	default:
		err = c.reduceSlices(ctx, alg, &reducePlan{dt: dt, op: op, src: src, dst: dst, block: count, o: -1}, count)
	}
	return c.finish(ctx, name, err)
}
