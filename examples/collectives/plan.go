package main

import (
	"context"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// plan is one row of the table: a collective at one size, with its
// buffers filled, the call to time and the check of its result.
type plan struct {
	size  int // bytes, as nccl-tests count them (algbw = size / time)
	count int // elements per rank (per pair for all-to-all)
	algo  collective.Algorithm
	call  func(ctx context.Context) error
	check func() (wrong int, err error)
}

// job is what every plan of a rank shares: the Comm, the window (sources
// at 0, destinations at dstOff) and the type, operator and root.
type job struct {
	c      *collective.Comm
	w      *gin.Window
	dstOff int
	dt     collective.DataType
	op     collective.Op
	root   int
}

// plan lays out collective k for size bytes (nccl-tests' size: the
// all-reduce and broadcast message, the gathered or scattered whole, the
// all-to-all send buffer of one rank) and fills the sources. ok is false
// when the size holds no element per rank.
func (j *job) plan(k collective.Collective, size int) (p plan, ok bool, err error) {
	c, w, dt, es := j.c, j.w, j.dt, j.dt.Size()
	n, me := c.Size(), c.Rank()
	src, dst := collective.At(w, 0), collective.At(w, j.dstOff)
	whole := size / es // elements in the message
	per := whole / n   // elements per rank or pair
	switch k {
	case collective.AllReduceOp:
		p = plan{size: whole * es, count: whole, algo: c.Algorithm(k, whole, dt)}
		err = fill(w, 0, dt, me, 0, whole)
		p.call = func(ctx context.Context) error { return c.AllReduce(ctx, dst, src, whole, dt, j.op) }
		p.check = func() (int, error) {
			return verify(w, j.dstOff, dt, whole, func(i int) float64 { return reduced(j.op, n, i) })
		}
	case collective.BroadcastOp:
		p = plan{size: whole * es, count: whole, algo: c.Algorithm(k, whole, dt)}
		if me == j.root {
			err = fill(w, 0, dt, me, 0, whole)
		}
		p.call = func(ctx context.Context) error { return c.Broadcast(ctx, dst, src, whole, dt, j.root) }
		p.check = func() (int, error) {
			return verify(w, j.dstOff, dt, whole, func(i int) float64 { return value(j.root, i) })
		}
	case collective.AllGatherOp:
		p = plan{size: n * per * es, count: per, algo: c.Algorithm(k, per, dt)}
		err = fill(w, 0, dt, me, 0, per)
		p.call = func(ctx context.Context) error { return c.AllGather(ctx, dst, src, per, dt) }
		p.check = func() (int, error) {
			return verify(w, j.dstOff, dt, n*per, func(i int) float64 { return value(i/per, i%per) })
		}
	case collective.ReduceScatterOp:
		p = plan{size: n * per * es, count: per, algo: c.Algorithm(k, per, dt)}
		err = fill(w, 0, dt, me, 0, n*per)
		p.call = func(ctx context.Context) error { return c.ReduceScatter(ctx, dst, src, per, dt, j.op) }
		p.check = func() (int, error) {
			return verify(w, j.dstOff, dt, per, func(i int) float64 { return reduced(j.op, n, me*per+i) })
		}
	case collective.AllToAllOp:
		p = plan{size: n * per * es, count: per, algo: c.Algorithm(k, per, dt)}
		err = fill(w, 0, dt, me, 0, n*per)
		p.call = func(ctx context.Context) error { return c.AllToAll(ctx, dst, src, per, dt) }
		p.check = func() (int, error) {
			return verify(w, j.dstOff, dt, n*per, func(i int) float64 { return value(i/per, me*per+i%per) })
		}
	case collective.AllToAllVOp:
		p, err = j.planV(per)
	}
	return p, per > 0 || (whole > 0 && (k == collective.AllReduceOp || k == collective.BroadcastOp)), err
}

// vcount is what rank r sends rank p in the all-to-all-v rows: half or
// one and a half times per, alternating, so counts differ per pair and
// average per.
func vcount(r, p, per int) int { return per/2 + (r+p)%2*per }

// planV is the all-to-all-v row: rank r sends vcount(r, p, per) elements
// to p, its block for p holding values r, 2*per*p + i.
func (j *job) planV(per int) (plan, error) {
	c, w, dt, es := j.c, j.w, j.dt, j.dt.Size()
	n, me := c.Size(), c.Rank()
	send, recv := make([]int, n), make([]int, n)
	off, total := 0, 0
	for p := range n {
		send[p] = vcount(me, p, per)
		if err := fill(w, off*es, dt, me, 2*per*p, send[p]); err != nil {
			return plan{}, err
		}
		off += send[p]
	}
	for q := range n {
		total += vcount(q, me, per)
	}
	room := (w.Size() - j.dstOff) / es
	pl := plan{size: off * es, count: per, algo: c.Algorithm(collective.AllToAllVOp, per, dt)}
	pl.call = func(ctx context.Context) error {
		return c.AllToAllV(ctx, collective.At(w, j.dstOff), room, collective.At(w, 0), send, recv, dt)
	}
	pl.check = func() (int, error) {
		wrong, at := 0, 0
		for q := range n {
			if recv[q] != vcount(q, me, per) {
				wrong++
				continue
			}
			k, err := verify(w, j.dstOff+at*es, dt, recv[q], func(i int) float64 { return value(q, 2*per*me+i) })
			if err != nil {
				return 0, err
			}
			wrong, at = wrong+k, at+recv[q]
		}
		return wrong, nil
	}
	return pl, nil
}
