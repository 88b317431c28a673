package collective

import (
	"context"
	"fmt"
)

// AllToAll sends block p (count elements of dt, at src + p*count
// elements) of every rank r to block r of dst at rank p (ncclAlltoAll;
// MPI_Alltoall). src and dst hold Size()*count elements each and may not
// overlap (no in-place form).
//
// Algorithm: OneShot (through scratch) up to Config.OneShotMax bytes per
// block, Direct above (each rank puts its block straight into the peer's
// dst once the peer said it entered; rotated order). Errors as AllReduce.
func (c *Comm) AllToAll(ctx context.Context, dst, src Buffer, count int, dt DataType) error {
	const name = "all-to-all"
	if err := checkBuffers(name, dst, c.n*count, src, c.n*count, dt); err != nil {
		return err
	}
	b := count * dt.Size()
	if src.overlaps(c.n*b, dst, c.n*b) {
		return fmt.Errorf("%s: source and destination overlap: %w", name, ErrBadArgument)
	}
	if ok, err := c.startCount(name, count); !ok {
		return err
	}
	part := func(p int) Buffer { return Buffer{src.Window, src.Offset + p*b} }
	block := func(r int) []byte { return dst.Window.Bytes()[dst.Offset+r*b:][:b] }
	copy(block(c.me), part(c.me).bytes(b))
	var err error
	switch c.choose(AllToAllOp, b) {
	case Local:
	case OneShot:
		h := c.begin()
		if err = c.scatterSlots(h, b, part); err == nil {
			err = c.eachArrival(ctx, one, func(p int) error {
				copy(block(p), c.scratchBytes(h+p*b, b))
				return nil
			})
		}
	default:
		err = c.direct(ctx, b, func(p int) (Buffer, int) { return part(p), dst.Offset + c.me*b }, dst)
	}
	return c.finish(ctx, name, err)
}
