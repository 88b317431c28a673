//go:build ofi && cgo && linux

package main

// The raw anchor's loops driven from Go (-loop go): the same libfabric
// calls as raw.go's C loops (raw_write, raw_poll), one cgo call per post
// and per CQ read, and nothing else of rdmactor. It separates what any Go
// program pays to drive libfabric (cgo transitions, the Go scheduler's
// threads beside the polling one) from what rdmactor's layers add:
// rdmactor / raw-go is the layers' cost, raw-go / raw the runtime's.

/*
#include <stddef.h>
long rawgo_counter(void *r, int remote);
long rawgo_poll(void *r, int remote);
long rawgo_write(void *r, size_t len, int data);
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"

	"github.com/rdmactor/rdmactor/internal/idle"
)

// goSchedEvery is how many CQ reads pass between two runtime.Gosched calls
// in the plain Go loop (-loop go): without yields a goroutine that polls
// for more than 10 ms has its P retaken by sysmon on every tick, which
// slows a sockets ping-pong from Go well behind the C loop. The anchor
// keeps the public Gosched, as a plain Go program would; on a VM where a
// CQ read's system calls take several µs, 2048 reads still reach sysmon's
// 10 ms.
const goSchedEvery = 2048

// goYieldEvery is the CQ reads between yields of -loop goyield: the ofi
// provider's pace (transport/rdma/ofi/sched.go), with runtime.goyield,
// which wakes no other thread, so the loop stays on its thread.
const goYieldEvery = 128

// Which counter a call returns (raw.go, rawgo_count).
const (
	outstandingCount = 0 // local completions not yet seen
	remoteCount      = 1 // remote CQ data entries seen
)

// goPoller drives one raw side from Go and counts CQ reads between its
// yields.
type goPoller struct {
	r     unsafe.Pointer // the C raw struct (C memory)
	polls int
	every int    // CQ reads between yields
	yield func() // runtime.Gosched, or idle.Yield (runtime.goyield) for -loop goyield
}

func newGoPoller(s *rawSide) *goPoller {
	if s.goYield {
		return &goPoller{r: unsafe.Pointer(s.r), every: goYieldEvery, yield: idle.Yield}
	}
	return &goPoller{r: unsafe.Pointer(s.r), every: goSchedEvery, yield: runtime.Gosched}
}

// poll reads the CQ once and returns the counter which.
func (g *goPoller) poll(which C.int) (int64, error) {
	if g.polls++; g.polls%g.every == 0 {
		g.yield()
	}
	v := C.rawgo_poll(g.r, which)
	if v < 0 {
		return 0, rawError("fi_cq_read (go loop)", C.int(v))
	}
	return int64(v), nil
}

// pollWhile reads the CQ while more(counter which) holds, starting from the
// counter's value v, and returns its last value.
func (g *goPoller) pollWhile(which C.int, v int64, more func(int64) bool) (int64, error) {
	for more(v) {
		var err error
		if v, err = g.poll(which); err != nil {
			return v, err
		}
	}
	return v, nil
}

// waitRemote polls until n remote CQ data entries arrived in total.
func (g *goPoller) waitRemote(n int64) error {
	_, err := g.pollWhile(remoteCount, int64(C.rawgo_counter(g.r, remoteCount)), func(v int64) bool { return v < n })
	return err
}

// drain polls until every local completion was seen.
func (g *goPoller) drain() error {
	_, err := g.pollWhile(outstandingCount, int64(C.rawgo_counter(g.r, outstandingCount)), func(v int64) bool { return v > 0 })
	return err
}

// write posts one write of size bytes (with remote CQ data if data) and
// returns the local completions outstanding.
func (g *goPoller) write(size int, data bool) (int64, error) {
	v := C.rawgo_write(g.r, C.size_t(size), cbool(data))
	if v < 0 {
		return 0, rawError("fi_writemsg (go loop)", C.int(v))
	}
	return int64(v), nil
}

// pingpongGo is raw_pingpong with the loop in Go: the mean one-way time
// (half a round trip).
func (s *rawSide) pingpongGo(server bool, size, iters, warmup int) (time.Duration, error) {
	g := newGoPoller(s)
	base := int64(C.rawgo_counter(g.r, remoteCount))
	var t0 time.Time
	for i := range warmup + iters {
		if i == warmup {
			t0 = time.Now()
		}
		if !server {
			if _, err := g.write(size, true); err != nil {
				return 0, err
			}
		}
		if err := g.waitRemote(base + int64(i) + 1); err != nil {
			return 0, err
		}
		if server {
			if _, err := g.write(size, true); err != nil {
				return 0, err
			}
		}
	}
	t := time.Since(t0)
	return t / time.Duration(2*iters), g.drain()
}

// bandwidthGo is raw_bw with the loop in Go: MB/s from the first post to
// the server's answer.
func (s *rawSide) bandwidthGo(server bool, size, iters, window int) (float64, error) {
	g := newGoPoller(s)
	base := int64(C.rawgo_counter(g.r, remoteCount))
	if server {
		if err := g.waitRemote(base + 1); err != nil {
			return 0, err
		}
		if _, err := g.write(0, true); err != nil {
			return 0, err
		}
		return 0, g.drain()
	}
	t0 := time.Now()
	out := int64(C.rawgo_counter(g.r, outstandingCount))
	full := func(v int64) bool { return v >= int64(window) }
	for i := range iters {
		var err error
		if _, err = g.pollWhile(outstandingCount, out, full); err != nil {
			return 0, err
		}
		if out, err = g.write(size, i == iters-1); err != nil {
			return 0, err
		}
	}
	if err := g.waitRemote(base + 1); err != nil {
		return 0, err
	}
	t := time.Since(t0)
	return float64(size) * float64(iters) / float64(t.Nanoseconds()) * 1e3, g.drain()
}
