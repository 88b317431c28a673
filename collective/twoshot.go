package collective

import "context"

// twoShot runs one slice as a direct reduce-scatter, then (with gather) a
// direct all-gather ("two-shot" all-reduce: NCCL's symmetric-memory
// kernels, MSCCL's all-pairs): every rank puts chunk p of its source into
// slot (its rank) of p's scratch, reduces its own chunk from every slot in
// rank order, and puts each reduced piece straight into every peer's
// destination: the peers are in this call (their data is in the piece)
// and wait for it. The same data per rank as a ring, in 2 steps instead of
// 2(n-1); all pieces of Config.Piece.
//
// The reduction accumulates in this rank's own scratch slot (no peer
// writes it) and writes the destination last, so the source may be the
// destination (in place).
func (c *Comm) twoShot(ctx context.Context, pl *reducePlan, stride int) error {
	n, q := c.n, c.me
	es := pl.dt.Size()
	pe := max(1, c.cfg.Piece/es)
	h := c.begin()
	sw, dw := pl.src.Window, pl.dst.Window
	srcAt := func(e int) int { return pl.src.Offset + e*es }
	dstAt := func(e int) int { return pl.dst.Offset + e*es }
	slotAt := func(r, off int) int { return h + r*stride + off*es }

	for i := 1; i < n; i++ {
		p := c.peer(i)
		so, _, l := pl.chunk(p, n)
		for k := range pieces(l, pe) {
			off := k * pe
			if err := c.put(p, c.scratch, slotAt(q, off), sw, srcAt(so+off), min(pe, l-off)*es); err != nil {
				return err
			}
		}
	}
	so, do, l := pl.chunk(q, n)
	for k := range pieces(l, pe) {
		off := k * pe
		nb := min(pe, l-off) * es
		out := dw.Bytes()[dstAt(do+off):][:nb]
		acc := c.scratchBytes(slotAt(q, off), nb)
		part := func(r int) []byte {
			if r == q {
				return sw.Bytes()[srcAt(so+off):][:nb]
			}
			return c.scratchBytes(slotAt(r, off), nb)
		}
		for r := range n {
			if r != q {
				if err := c.await(ctx, r, 1); err != nil {
					return err
				}
			}
			switch {
			case r == 1 && n == 2:
				reduce(pl.dt, pl.op, out, part(0), part(1))
			case r == 1:
				reduce(pl.dt, pl.op, acc, part(0), part(1))
			case r > 1 && r < n-1:
				reduce(pl.dt, pl.op, acc, acc, part(r))
			case r > 1:
				reduce(pl.dt, pl.op, out, acc, part(r))
			}
		}
		if !pl.gather {
			continue
		}
		for i := 1; i < n; i++ {
			if err := c.put(c.peer(i), dw, dstAt(do+off), dw, dstAt(do+off), nb); err != nil {
				return err
			}
		}
	}
	if !pl.gather {
		return nil
	}
	return c.eachArrival(ctx, func(r int) int {
		_, _, l := pl.chunk(r, n)
		return pieces(l, pe)
	}, nil)
}
