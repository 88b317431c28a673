// Package pins keeps a resource (a memory mapping, a provider) alive under
// the calls that use it. A call pins it for its duration; Close fails every
// later pin, then waits until the pins held drop, so what it frees is no
// longer in use. Pinning never blocks: calls that pin several resources
// cannot deadlock against each other or against Close.
//
// The transports' regions and the ofi provider use it: shm's Post pins the
// regions a WQE names while it copies and adds; ofi's Post, Import and
// RegisterMemory pin the provider, and its progress pins a region while it
// applies a signal there.
package pins

import (
	"math"
	"runtime"
	"sync/atomic"
)

// Pins is the guard of one resource. The zero value is open, with no pin
// held. Safe for concurrent use.
type Pins struct {
	state atomic.Int64 // closedBit | number of pins held
}

const closedBit = math.MinInt64

// Pin reports whether the resource is open and, if so, holds it open until
// Unpin.
func (p *Pins) Pin() bool {
	if p.state.Add(1) < 0 {
		p.state.Add(-1)
		return false
	}
	return true
}

// Unpin drops a pin that Pin took.
func (p *Pins) Unpin() { p.state.Add(-1) }

// Closed reports whether Close has begun.
func (p *Pins) Closed() bool { return p.state.Load() < 0 }

// Window returns mem[:n:n] while the resource is open and nil once Close
// has begun: what a region's Bytes hands out (rdma.MemoryRegion), so that
// no caller is given memory that Close is about to unmap.
func (p *Pins) Window(mem []byte, n int) []byte {
	if p.Closed() {
		return nil
	}
	return mem[:n:n]
}

// Close fails every later Pin and waits until no pin is held. It reports
// false, at once, if Close had begun before. Pins are held for the length
// of one call (a copy, a post, an atomic add), so the wait yields rather
// than sleeps and needs no deadline of its own.
func (p *Pins) Close() bool {
	if p.state.Or(closedBit) < 0 {
		return false
	}
	for p.state.Load() != closedBit {
		runtime.Gosched()
	}
	return true
}
