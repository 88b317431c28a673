package collective

import (
	"context"
	"fmt"
)

// AllGather puts the count elements of dt at src of rank r into block r
// of dst on every rank: dst holds Size()*count elements, rank order
// (ncclAllGather; MPI_Allgather). src may be this rank's own block of dst
// (in place: then src's offset differs per rank, which is fine, as only
// dst must be symmetric); any other overlap is ErrBadArgument.
//
// Algorithm: Hierarchical up to Config.HierarchicalMax bytes per rank
// where the ranks span hosts, several on each (Config.HostRanks);
// otherwise OneShot (through scratch) up to Config.OneShotMax bytes per
// rank, Direct (every rank puts its block into every peer's dst once the
// peer said it entered) above. Errors as AllReduce.
func (c *Comm) AllGather(ctx context.Context, dst, src Buffer, count int, dt DataType) error {
	const name = "all-gather"
	if err := checkBuffers(name, dst, c.n*count, src, count, dt); err != nil {
		return err
	}
	b := count * dt.Size()
	if mine := (Buffer{dst.Window, dst.Offset + c.me*b}); src.overlaps(b, dst, c.n*b) && src != mine {
		return fmt.Errorf("%s: source overlaps the destination other than at this rank's block: %w", name, ErrBadArgument)
	}
	if ok, err := c.startCount(name, count); !ok {
		return err
	}
	block := func(r int) int { return dst.Offset + r*b }
	copy(dst.Window.Bytes()[block(c.me):][:b], src.bytes(b))
	var err error
	switch c.choose(AllGatherOp, b) {
	case Local:
	case OneShot:
		h := c.begin()
		if err = c.scatterSlots(h, b, func(int) Buffer { return src }); err == nil {
			err = c.eachArrival(ctx, one, func(p int) error {
				copy(dst.Window.Bytes()[block(p):][:b], c.scratchBytes(h+p*b, b))
				return nil
			})
		}
	case Hierarchical:
		err = c.allGatherHierarchical(ctx, dst, src, b)
	default:
		err = c.direct(ctx, b, func(p int) (Buffer, int) { return src, block(c.me) }, dst)
	}
	return c.finish(ctx, name, err)
}

// scatterSlots puts b bytes from part(p) into slot c.me (b bytes each) of
// every peer p's scratch half h, one message each.
func (c *Comm) scatterSlots(h, b int, part func(p int) Buffer) error {
	for i := 1; i < c.n; i++ {
		p := c.peer(i)
		s := part(p)
		if err := c.put(p, c.scratch, h+c.me*b, s.Window, s.Offset, b); err != nil {
			return err
		}
	}
	return nil
}

// direct is the Direct algorithm of AllGather and AllToAll: tell every
// peer this rank entered; then, as each peer's own "entered" arrives
// (eachArrival: whoever is there first), put b bytes from src(p) into p's
// dst at byte offset at (both returned by src); last wait for every
// peer's data. A peer that entered cannot leave before it has this rank's
// data, so nothing is written into a buffer its owner still uses; the
// epoch keeps scratch halves alternating for the algorithms around it.
func (c *Comm) direct(ctx context.Context, b int, src func(p int) (Buffer, int), dst Buffer) error {
	c.begin()
	for i := 1; i < c.n; i++ {
		if err := c.notify(c.peer(i)); err != nil {
			return err
		}
	}
	err := c.eachArrival(ctx, one, func(p int) error {
		s, at := src(p)
		return c.put(p, dst.Window, at, s.Window, s.Offset, b)
	})
	if err != nil {
		return err
	}
	m := c.messages(b)
	return c.eachArrival(ctx, func(int) int { return m }, nil)
}

// one is eachArrival's count for one message per peer.
func one(int) int { return 1 }
