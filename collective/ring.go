package collective

import "context"

// reducePlan is one reduce-scatter (and, with gather, all-gather) over a
// slice of a message, by Ring or TwoShot. The slice splits into n chunks;
// a ring's rank q ends the reduce-scatter holding chunk q+o+1 fully
// reduced, a two-shot's chunk q (o is ignored).
type reducePlan struct {
	dt       DataType
	op       Op
	src, dst Buffer
	// allReduce: the slice is elements [a, b) of src and dst, cut in n
	// near-equal chunks at the same offsets in both. Otherwise
	// (ReduceScatter) chunk c is elements [a, b) of block c of src (block
	// elements each), and the final chunk goes to [a, b) of dst.
	allReduce bool
	block     int
	a, b      int
	o         int
	gather    bool
}

// chunk is chunk c's element offset in src, in dst, and its length.
func (pl *reducePlan) chunk(c, n int) (srcAt, dstAt, length int) {
	if pl.allReduce {
		l := pl.b - pl.a
		s, e := pl.a+l*c/n, pl.a+l*(c+1)/n
		return s, s, e - s
	}
	return c*pl.block + pl.a, pl.a, pl.b - pl.a
}

// pieces is how many puts of at most pe elements carry l elements (one,
// with no data, for l = 0).
func pieces(l, pe int) int {
	if l <= 0 {
		return 1
	}
	return (l + pe - 1) / pe
}

// reduceSlices runs pl over a message of count elements (per block for
// ReduceScatter) by alg (Ring or TwoShot) in slices whose receive buffers
// (n-1 for a ring, n slots for a two-shot) fit a scratch half, one epoch
// per slice. Between slices it flushes: a rank's puts out of its scratch
// of slice k complete before a peer in slice k+2 (which it cannot reach
// before this rank entered slice k+1) overwrites it.
func (c *Comm) reduceSlices(ctx context.Context, alg Algorithm, pl *reducePlan, count int) error {
	es := pl.dt.Size()
	buffers := c.n - 1
	if alg == TwoShot {
		buffers = c.n
	}
	chunkMax := c.cfg.Scratch / buffers / es // elements per receive buffer
	sliceMax := chunkMax
	if pl.allReduce {
		sliceMax *= c.n
	}
	for a := 0; a < count; a += sliceMax {
		if a > 0 {
			if err := c.flush(ctx); err != nil {
				return err
			}
		}
		pl.a, pl.b = a, min(count, a+sliceMax)
		var err error
		if alg == TwoShot {
			err = c.twoShot(ctx, pl, chunkMax*es)
		} else {
			err = c.ring(ctx, pl, chunkMax*es)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ring runs one slice. Reduce-scatter step s (0..n-2): receive chunk
// q+o-s-1 from the left into receive buffer s, reduce this rank's own
// chunk into it and pass it right (into the right's buffer s+1), or at
// the last step reduce it into dst; step 0's send is this rank's own chunk
// q+o. All-gather step t (0..n-2): pass right the chunk received at step
// t-1 (at t = 0 the chunk just reduced), straight into the right's dst: the
// right is in this call (the chunk holds its data) and cannot leave before
// it has it. Each chunk moves in Config.Piece puts, each counted, so a
// step starts on a piece as soon as it lands. Messages from the left come
// in exactly the order they are awaited.
func (c *Comm) ring(ctx context.Context, pl *reducePlan, stride int) error {
	n, q := c.n, c.me
	right, left := c.peer(1), c.peer(n-1)
	es := pl.dt.Size()
	pe := max(1, c.cfg.Piece/es)
	mod := func(i int) int { return ((i % n) + n) % n }
	h := c.begin()
	sw, dw := pl.src.Window, pl.dst.Window
	srcAt := func(e int) int { return pl.src.Offset + e*es }
	dstAt := func(e int) int { return pl.dst.Offset + e*es }

	so, _, l := pl.chunk(mod(q+pl.o), n)
	for i := range pieces(l, pe) {
		off := i * pe
		if err := c.put(right, c.scratch, h+off*es, sw, srcAt(so+off), min(pe, l-off)*es); err != nil {
			return err
		}
	}
	for s := 0; s < n-1; s++ {
		so, do, l := pl.chunk(mod(q+pl.o-s-1), n)
		buf := h + s*stride
		for i := range pieces(l, pe) {
			off := i * pe
			nb := min(pe, l-off) * es
			if err := c.await(ctx, left, 1); err != nil {
				return err
			}
			in := c.scratchBytes(buf+off*es, nb)
			mine := sw.Bytes()[srcAt(so+off):][:nb]
			if s < n-2 {
				reduce(pl.dt, pl.op, in, in, mine)
				if err := c.put(right, c.scratch, buf+stride+off*es, c.scratch, buf+off*es, nb); err != nil {
					return err
				}
				continue
			}
			reduce(pl.dt, pl.op, dw.Bytes()[dstAt(do+off):][:nb], in, mine)
			if pl.gather {
				if err := c.put(right, dw, dstAt(do+off), dw, dstAt(do+off), nb); err != nil {
					return err
				}
			}
		}
	}
	if !pl.gather {
		return nil
	}
	for t := 0; t < n-1; t++ {
		_, do, l := pl.chunk(mod(q+pl.o-t), n)
		for i := range pieces(l, pe) {
			off := i * pe
			if err := c.await(ctx, left, 1); err != nil {
				return err
			}
			if t < n-2 {
				if err := c.put(right, dw, dstAt(do+off), dw, dstAt(do+off), min(pe, l-off)*es); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
