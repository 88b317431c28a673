package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The mesh figure: every rank is client and server at once. Each rank
// makes MeshN requests (RequestFuture, one at a time) to the pong of a
// random other rank, while its own pong answers the others: the load of a
// sharded service, and the one that shows what a rank costs its host when
// ranks outnumber cores.

type (
	// Mesh tells a rank to make N requests of Size bytes to random other
	// ranks over the named transport; answered with MeshResult.
	Mesh struct {
		Transport string
		N, Size   int
		Seed      uint64
		Addrs     []string // every rank's PID address on the transport (the anchor's are known to rank 0 only)
	}
	// MeshResult is one rank's request latencies (ns) and how long its N
	// requests took (ns).
	MeshResult struct {
		Lat     []int64
		Elapsed int64
		Err     string
	}
)

// mesh runs one rank's part of the mesh figure.
func (r *rank) mesh(m *Mesh) *MeshResult {
	t := r.ts[m.Transport]
	if t == nil {
		return &MeshResult{Err: "unknown transport " + m.Transport}
	}
	if r.node.Rank() != 0 && len(m.Addrs) == len(t.addrs) {
		copy(t.addrs, m.Addrs)
	}
	me, size := r.node.Rank(), r.node.Size()
	rng := rand.New(rand.NewPCG(m.Seed, uint64(me)))
	msg := t.msg(m.Size)
	res := &MeshResult{Lat: make([]int64, 0, m.N)}
	start := time.Now()
	for range m.N {
		k := rng.IntN(size - 1)
		if k >= me {
			k++
		}
		t0 := time.Now()
		if _, err := t.system.Root.RequestFuture(t.pid(k, "pong"), msg, 10*time.Second).Result(); err != nil {
			res.Err = fmt.Sprintf("rank %d: request to rank %d: %v", me, k, err)
			return res
		}
		res.Lat = append(res.Lat, int64(time.Since(t0)))
	}
	res.Elapsed = int64(time.Since(start))
	return res
}

// meshRound runs the mesh figure once on every rank over t and returns
// every request's latency and the requests per second of the whole job.
func meshRound(ctx context.Context, r *rank, t *transport, o options, seed uint64) ([]time.Duration, float64, error) {
	n := r.node
	futs := make([]interface {
		Result() (any, error)
	}, n.Size())
	for k := range n.Size() {
		futs[k] = n.Root().RequestFuture(n.PID(k, "ctl"), &Mesh{Transport: t.name, N: o.meshN, Size: o.size, Seed: seed, Addrs: t.addrs}, o.timeout)
	}
	var lat []time.Duration
	var longest int64
	for k, f := range futs {
		v, err := f.Result()
		if err != nil {
			return nil, 0, fmt.Errorf("mesh on rank %d: %w", k, err)
		}
		mr := v.(*MeshResult)
		if mr.Err != "" {
			return nil, 0, fmt.Errorf("mesh: %s", mr.Err)
		}
		for _, l := range mr.Lat {
			lat = append(lat, time.Duration(l))
		}
		longest = max(longest, mr.Elapsed)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	return lat, float64(len(lat)) / (float64(longest) / 1e9), nil
}
