package collective

import (
	"context"
	"encoding/binary"
	"fmt"
)

// AllToAllV sends sendCounts[p] elements of dt to rank p, and fills
// recvCounts[p] with the count rank p sent here (MPI_Alltoallv with
// displacements packed in rank order; NCCL builds it from grouped
// ncclSend/ncclRecv). The blocks for ranks 0, 1, ... lie back to back at
// src; the blocks from ranks 0, 1, ... are written back to back at dst,
// which holds at most dstCount elements. src and dst may not overlap.
//
// The counts travel first: every rank puts its dstCount and sendCounts
// into every peer's scratch, so every rank knows every count and where
// each block lands; then each rank puts its blocks straight into the
// receivers' dst (Direct). A sum of counts over a receiver's dstCount, or
// a rank's invalid arguments, fails the call on every rank alike, before
// any data moves, with ErrBadArgument. Errors otherwise as AllReduce;
// recvCounts is filled once the counts arrived, even when the call fails
// later.
func (c *Comm) AllToAllV(ctx context.Context, dst Buffer, dstCount int, src Buffer, sendCounts, recvCounts []int, dt DataType) error {
	const name = "all-to-all-v"
	if len(sendCounts) != c.n || len(recvCounts) != c.n {
		return fmt.Errorf("%s: %d send and %d receive counts for %d ranks: %w", name, len(sendCounts), len(recvCounts), c.n, ErrBadArgument)
	}
	// A local argument error must still reach the peers (they wait for
	// this rank's counts): it travels as a count of -1 and fails the call
	// everywhere.
	total, local := 0, error(nil)
	for p, k := range sendCounts {
		if k < 0 {
			local = fmt.Errorf("%s: send count %d for rank %d: %w", name, k, p, ErrBadArgument)
		}
		total += max(k, 0)
	}
	if local == nil {
		local = checkBuffers(name, dst, dstCount, src, total, dt)
	}
	if local == nil && src.overlaps(total*dt.Size(), dst, dstCount*dt.Size()) {
		local = fmt.Errorf("%s: source and destination overlap: %w", name, ErrBadArgument)
	}
	if err := c.start(name); err != nil {
		return err
	}
	m, err := c.exchangeCounts(ctx, dstCount, sendCounts, local != nil)
	if err != nil {
		return c.finish(ctx, name, err)
	}
	for p := range c.n {
		recvCounts[p] = m.count(p, c.me)
	}
	if bad := m.check(); bad != nil {
		// Nothing moved and every rank agrees: the Comm stays usable.
		if err := c.finish(ctx, name, nil); err != nil {
			return err
		}
		if local != nil {
			return local
		}
		return fmt.Errorf("%s: %w", name, bad)
	}
	return c.finish(ctx, name, c.allToAllVData(ctx, dst, src, m, dt))
}

// countMatrix is every rank's counts as exchanged: row r is rank r's
// dstCount (-1: its arguments were bad) and then its send counts.
type countMatrix struct {
	n    int
	rows []int64
}

func (m countMatrix) capacity(r int) int64 { return m.rows[r*(m.n+1)] }
func (m countMatrix) count(from, to int) int {
	return int(m.rows[from*(m.n+1)+1+to])
}

// check reports the first rank with bad arguments or a receiver whose
// blocks overflow its dst; every rank finds the same.
func (m countMatrix) check() error {
	for r := range m.n {
		if m.capacity(r) < 0 {
			return fmt.Errorf("rank %d has bad arguments: %w", r, ErrBadArgument)
		}
	}
	for to := range m.n {
		var sum int64
		for from := range m.n {
			sum += int64(m.count(from, to))
		}
		if sum > m.capacity(to) {
			return fmt.Errorf("rank %d receives %d elements into room for %d: %w", to, sum, m.capacity(to), ErrBadArgument)
		}
	}
	return nil
}

// exchangeCounts puts (dstCount, sendCounts...) into slot c.me of every
// peer's scratch half of a new epoch (one-shot) and collects every rank's.
func (c *Comm) exchangeCounts(ctx context.Context, dstCount int, sendCounts []int, bad bool) (countMatrix, error) {
	row := 8 * (c.n + 1)
	m := countMatrix{n: c.n, rows: make([]int64, c.n*(c.n+1))}
	h := c.begin()
	mine := c.scratchBytes(h+c.me*row, row)
	binary.LittleEndian.PutUint64(mine, uint64(int64(dstCount)))
	if bad {
		binary.LittleEndian.PutUint64(mine, ^uint64(0))
	}
	for p, k := range sendCounts {
		binary.LittleEndian.PutUint64(mine[8+8*p:], uint64(int64(k)))
	}
	for i := 1; i < c.n; i++ {
		if err := c.put(c.peer(i), c.scratch, h+c.me*row, c.scratch, h+c.me*row, row); err != nil {
			return m, err
		}
	}
	unpack := func(r int) error {
		b := c.scratchBytes(h+r*row, row)
		for k := range c.n + 1 {
			m.rows[r*(c.n+1)+k] = int64(binary.LittleEndian.Uint64(b[8*k:]))
		}
		return nil
	}
	unpack(c.me)
	if err := c.eachArrival(ctx, one, unpack); err != nil {
		return m, err
	}
	return m, nil
}

// allToAllVData moves the blocks: every peer is in the call (its counts
// came), so each rank puts straight into the receivers' dst, at the
// offset of its block there: the sum of the counts of lower ranks to that
// receiver.
func (c *Comm) allToAllVData(ctx context.Context, dst, src Buffer, m countMatrix, dt DataType) error {
	es := dt.Size()
	at := func(from, to int) int { // element offset of from's block in to's dst
		off := 0
		for r := range from {
			off += m.count(r, to)
		}
		return off
	}
	sendAt := func(p int) int { // element offset of the block for p in src
		off := 0
		for q := range p {
			off += m.count(c.me, q)
		}
		return off
	}
	if k := m.count(c.me, c.me); k > 0 {
		copy(dst.Window.Bytes()[dst.Offset+at(c.me, c.me)*es:][:k*es], src.Window.Bytes()[src.Offset+sendAt(c.me)*es:][:k*es])
	}
	for i := 1; i < c.n; i++ {
		p := c.peer(i)
		if k := m.count(c.me, p); k > 0 {
			if err := c.put(p, dst.Window, dst.Offset+at(c.me, p)*es, src.Window, src.Offset+sendAt(p)*es, k*es); err != nil {
				return err
			}
		}
	}
	return c.eachArrival(ctx, func(p int) int {
		if k := m.count(p, c.me); k > 0 {
			return c.messages(k * es)
		}
		return 0
	}, nil)
}
