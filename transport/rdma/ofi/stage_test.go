//go:build ofi && cgo && linux

package ofi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStagePool checks the staging slots' bitmap: every slot is handed out
// once, an exhausted pool says so (-1: the caller posts from the source),
// a released slot comes back with its own context, and a zero-byte staged
// write's pool context goes back to the provider's pool.
func TestStagePool(t *testing.T) {
	var pool ctxPool
	defer pool.freeAll()
	var s stagePool
	s.init(nil, &pool)
	seen := map[int]bool{}
	ctxs := map[*ctx]bool{}
	for range stageSlots {
		i := s.get()
		require.GreaterOrEqual(t, i, 0)
		require.Less(t, i, stageSlots)
		require.False(t, seen[i], "slot %d handed out twice", i)
		seen[i] = true
		ctxs[s.ctxs[i]] = true
	}
	require.Len(t, ctxs, stageSlots, "each slot has its own context")
	require.Equal(t, -1, s.get(), "an exhausted pool hands out nothing")

	s.release(s.ctxs[17], 17)
	require.Equal(t, 17, s.get(), "a released slot is handed out again")
	require.Equal(t, -1, s.get())

	free := len(pool.free)
	c := pool.get()
	s.release(c, -1)
	require.Len(t, pool.free, free, "a zero-byte write's context goes back to the pool")
	require.Same(t, c, pool.free[len(pool.free)-1])
}

// TestDoneOrder checks that operations complete at post are reported in
// post order: at once when nothing earlier is unreported, else after the
// earlier ones complete.
func TestDoneOrder(t *testing.T) {
	var got []uint64
	q := &qp{cq: func(id uint64, err error) {
		require.NoError(t, err)
		got = append(got, id)
	}, ring: make([]opRec, 4)}

	q.done(1)
	require.Equal(t, []uint64{1}, got, "nothing earlier: reported at once")

	seq := q.push(2) // a write in flight
	q.done(3)
	q.done(4)
	require.Zero(t, q.reportDone(), "3 and 4 wait for 2")
	require.Equal(t, []uint64{1}, got)

	q.finish(seq, opDone, nil)
	require.Equal(t, 3, q.reportDone())
	require.Equal(t, []uint64{1, 2, 3, 4}, got)
	require.Equal(t, q.head, q.tail)

	q.done(5)
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, got)
}
