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
int rawgo_poll(void *r);
int rawgo_write(void *r, size_t len, int data);
long rawgo_remote(void *r);
long rawgo_outstanding(void *r);
*/
import "C"

import (
	"errors"
	"runtime"
	"time"
	"unsafe"
)

// goSchedEvery is how many CQ reads pass between two runtime.Gosched calls,
// as the ofi provider's schedPoint (progress.go): without them a goroutine
// that polls for more than 10 ms has its P retaken by sysmon on every tick
// (a sockets ping-pong from Go measured 1.20x the C loop without, 0.95x
// with).
const goSchedEvery = 2048

var errRawGo = errors.New("raw libfabric (go loop): a post or CQ read failed")

// goPoller counts CQ reads for goSchedEvery.
type goPoller struct {
	r     unsafe.Pointer // the C raw struct (C memory)
	polls int
}

func newGoPoller(s *rawSide) *goPoller { return &goPoller{r: unsafe.Pointer(s.r)} }

func (g *goPoller) remote() C.long      { return C.rawgo_remote(g.r) }
func (g *goPoller) outstanding() C.long { return C.rawgo_outstanding(g.r) }

func (g *goPoller) poll() error {
	if g.polls++; g.polls%goSchedEvery == 0 {
		runtime.Gosched()
	}
	if C.rawgo_poll(g.r) < 0 {
		return errRawGo
	}
	return nil
}

// waitRemote polls until n remote CQ data entries arrived in total.
func (g *goPoller) waitRemote(n C.long) error {
	for g.remote() < n {
		if err := g.poll(); err != nil {
			return err
		}
	}
	return nil
}

// drain polls until every local completion was seen.
func (g *goPoller) drain() error {
	for g.outstanding() > 0 {
		if err := g.poll(); err != nil {
			return err
		}
	}
	return nil
}

func (g *goPoller) write(size int, data bool) error {
	if C.rawgo_write(g.r, C.size_t(size), cbool(data)) != 0 {
		return errRawGo
	}
	return nil
}

// pingpongGo is raw_pingpong with the loop in Go: the mean one-way time
// (half a round trip).
func (s *rawSide) pingpongGo(server bool, size, iters, warmup int) (time.Duration, error) {
	g := newGoPoller(s)
	base := g.remote()
	var t0 time.Time
	for i := range warmup + iters {
		if i == warmup {
			t0 = time.Now()
		}
		want := base + C.long(i) + 1
		if !server {
			if err := g.write(size, true); err != nil {
				return 0, err
			}
		}
		if err := g.waitRemote(want); err != nil {
			return 0, err
		}
		if server {
			if err := g.write(size, true); err != nil {
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
	base := g.remote()
	if server {
		if err := g.waitRemote(base + 1); err != nil {
			return 0, err
		}
		if err := g.write(0, true); err != nil {
			return 0, err
		}
		return 0, g.drain()
	}
	t0 := time.Now()
	for i := range iters {
		for g.outstanding() >= C.long(window) {
			if err := g.poll(); err != nil {
				return 0, err
			}
		}
		if err := g.write(size, i == iters-1); err != nil {
			return 0, err
		}
	}
	if err := g.waitRemote(base + 1); err != nil {
		return 0, err
	}
	t := time.Since(t0)
	return float64(size) * float64(iters) / float64(t.Nanoseconds()) * 1e3, g.drain()
}
