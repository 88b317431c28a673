package ring

import (
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/memword"
)

// Reader is the consumer of one ring: the CPU proxy. Not safe for
// concurrent use: one proxy goroutine drives it.
type Reader struct {
	depth     uint64
	entries   []byte
	doorbell  *atomic.Uint64
	consumed  *atomic.Uint64
	completed *atomic.Uint64
	status    *atomic.Uint64
	next      uint64 // first sequence not yet decoded
}

// NewReader reads the ring whose host part is host (HostBytes(depth)
// bytes, 8-byte aligned) and whose depth is a power of two.
func NewReader(host []byte, depth int) (*Reader, error) {
	if depth <= 0 || depth&(depth-1) != 0 {
		return nil, fmt.Errorf("ring depth %d: want a power of two", depth)
	}
	if len(host) < HostBytes(depth) || !memword.Aligned(host, 0) {
		return nil, fmt.Errorf("ring host part of %d bytes: want %d, 8-byte aligned", len(host), HostBytes(depth))
	}
	return &Reader{
		depth:     uint64(depth),
		entries:   host[HostEntries:HostBytes(depth)],
		doorbell:  memword.Uint64(host, HostDoorbell),
		consumed:  memword.Uint64(host, HostConsumed),
		completed: memword.Uint64(host, HostCompleted),
		status:    memword.Uint64(host, HostStatus),
	}, nil
}

// Poll decodes the published entries from the next one up to the
// doorbell, at most len(buf), into buf and returns them. It returns no
// entries when nothing new was published, and a *TornError for an entry
// whose tag is wrong (nothing after it is returned).
func (r *Reader) Poll(buf []WQE) ([]WQE, error) {
	db := r.doorbell.Load() // acquire: entries below it are written
	n := 0
	for r.next < db && n < len(buf) {
		i := r.next & (r.depth - 1)
		w, err := Decode(r.entries[i*WQEBytes:(i+1)*WQEBytes], r.next)
		if err != nil {
			return buf[:n], err
		}
		buf[n] = w
		n++
		r.next++
	}
	return buf[:n], nil
}

// Next is the first sequence Poll has not returned yet.
func (r *Reader) Next() uint64 { return r.next }

// Release frees the slots of every entry Poll returned (stores consumed),
// once the proxy no longer reads them.
func (r *Reader) Release() { r.consumed.Store(r.next) }

// Complete marks every entry below seq locally complete (stores
// completed): kernels waiting in flush for them go on.
func (r *Reader) Complete(seq uint64) { r.completed.Store(seq) }

// Fail records a nonzero code in the ring's status word.
func (r *Reader) Fail(code uint64) { r.status.CompareAndSwap(0, code) }

// Status is the ring's status word (0 while healthy).
func (r *Reader) Status() uint64 { return r.status.Load() }
