package collective

import (
	"context"
	"fmt"
)

// Broadcast copies the count elements of dt at src of rank root into dst
// of every rank, root included (ncclBroadcast; MPI_Bcast). src is read on
// the root only; dst may be src there.
//
// Every non-root first tells the root it entered, and the root starts
// only when all have, so no rank writes into a destination still in use.
// Algorithm: Direct (the root puts into every peer's dst, in rotated
// order) up to Config.OneShotMax bytes or on 2 ranks (Hierarchical where
// the ranks span hosts, several on each: see Config.HostRanks), Chain
// (root, root+1, ..., each rank forwarding Config.Piece pieces as they
// land, so every rank copies the message once) above. Errors as AllReduce, and
// ErrBadArgument for a root outside 0..Size()-1.
func (c *Comm) Broadcast(ctx context.Context, dst, src Buffer, count int, dt DataType, root int) error {
	const name = "broadcast"
	if root < 0 || root >= c.n {
		return fmt.Errorf("%s: root %d of %d ranks: %w", name, root, c.n, ErrBadArgument)
	}
	if err := dst.check(name, "destination", count, dt); err != nil {
		return err
	}
	if c.me == root {
		if err := src.check(name, "source", count, dt); err != nil {
			return err
		}
	}
	if ok, err := c.startCount(name, count); !ok {
		return err
	}
	b := count * dt.Size()
	if c.me == root {
		copy(dst.bytes(b), src.bytes(b))
	}
	var err error
	switch alg := c.choose(BroadcastOp, b); {
	case alg == Local:
	case alg == Hierarchical:
		err = c.broadcastHierarchical(ctx, dst, b, root)
	case c.me != root:
		c.begin()
		if err = c.notify(root); err == nil {
			err = c.chainRecv(ctx, alg, dst, b, root)
		}
	default:
		c.begin()
		err = c.eachArrival(ctx, one, nil)
		for i := 1; i < c.n && err == nil; i++ {
			if alg == Direct || i == 1 {
				err = c.forward(alg, dst, b, c.peer(i))
			}
		}
	}
	return c.finish(ctx, name, err)
}

// chainRecv is a non-root's part after telling the root: Direct waits for
// the root's data; Chain waits piece by piece from the previous rank and
// forwards each to the next (unless this rank is the chain's last).
func (c *Comm) chainRecv(ctx context.Context, alg Algorithm, dst Buffer, b, root int) error {
	if alg == Direct {
		return c.await(ctx, root, c.messages(b))
	}
	prev, next := c.peer(c.n-1), c.peer(1)
	last := next == root
	for off := 0; off < b; off += c.cfg.Piece {
		if err := c.await(ctx, prev, 1); err != nil {
			return err
		}
		if !last {
			if err := c.put(next, dst.Window, dst.Offset+off, dst.Window, dst.Offset+off, min(c.cfg.Piece, b-off)); err != nil {
				return err
			}
		}
	}
	return nil
}

// forward puts the b bytes of dst here into dst of p: in one go for
// Direct, in Config.Piece pieces for Chain.
func (c *Comm) forward(alg Algorithm, dst Buffer, b, p int) error {
	if alg == Direct {
		return c.put(p, dst.Window, dst.Offset, dst.Window, dst.Offset, b)
	}
	for off := 0; off < b; off += c.cfg.Piece {
		if err := c.put(p, dst.Window, dst.Offset+off, dst.Window, dst.Offset+off, min(c.cfg.Piece, b-off)); err != nil {
			return err
		}
	}
	return nil
}
