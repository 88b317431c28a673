package ring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/memword"
)

// ErrAborted is returned by Producer.Post when abort was set while it
// waited for room or for its turn to publish.
var ErrAborted = errors.New("ring: aborted")

// Producer posts WQEs into a ring with the device's algorithm
// (impl/gin__proxy.cuh, step for step), from Go: the model that the
// host tests run against the Reader with many goroutines standing for GPU
// threads. It is safe for concurrent use, like the device side.
type Producer struct {
	depth    uint64
	reserved *atomic.Uint64 // device part
	ready    *atomic.Uint64
	doorbell *atomic.Uint64 // host part
	consumed *atomic.Uint64
	complete *atomic.Uint64
	entries  []byte
	abort    *atomic.Uint64
}

// NewProducer posts into the ring with device part dev (DevBytes) and host
// part host (HostBytes(depth)); it gives up when *abort becomes nonzero.
func NewProducer(dev, host []byte, depth int, abort *atomic.Uint64) (*Producer, error) {
	if depth <= 0 || depth&(depth-1) != 0 || len(dev) < DevBytes || len(host) < HostBytes(depth) {
		return nil, fmt.Errorf("ring producer: depth %d, %d device and %d host bytes", depth, len(dev), len(host))
	}
	return &Producer{
		depth:    uint64(depth),
		reserved: memword.Uint64(dev, DevReserved),
		ready:    memword.Uint64(dev, DevReady),
		doorbell: memword.Uint64(host, HostDoorbell),
		consumed: memword.Uint64(host, HostConsumed),
		complete: memword.Uint64(host, HostCompleted),
		entries:  host[HostEntries:HostBytes(depth)],
		abort:    abort,
	}, nil
}

// Post reserves a slot, writes w (its Seq is set here), and publishes it in
// order. It returns the sequence after w (what a flush waits for).
func (p *Producer) Post(w WQE) (uint64, error) {
	return p.PostN([]WQE{w})
}

// PostN is what the lanes of a warp posting together do on the device: one
// reservation of len(ws) slots, each WQE written to its slot, one publish
// (one doorbell store) for all. len(ws) must be 1..depth.
func (p *Producer) PostN(ws []WQE) (uint64, error) {
	n := uint64(len(ws))
	if n == 0 || n > p.depth {
		return 0, fmt.Errorf("ring: post %d WQEs into a ring of %d", n, p.depth)
	}
	base := p.reserved.Add(n) - n // atomicAdd returns the old value
	if !p.spin(func() bool { return base+n-p.consumed.Load() <= p.depth }) {
		return 0, ErrAborted
	}
	for k, w := range ws {
		w.Seq = base + uint64(k)
		i := w.Seq & (p.depth - 1)
		w.Encode(p.entries[i*WQEBytes : (i+1)*WQEBytes])
	}
	if !p.spin(func() bool { return p.ready.Load() == base }) {
		return 0, ErrAborted
	}
	p.doorbell.Store(base + n)
	p.ready.Store(base + n)
	return base + n, nil
}

// Flush waits until every sequence below upTo is complete (a kernel's
// flush).
func (p *Producer) Flush(upTo uint64) error {
	if !p.spin(func() bool { return p.complete.Load() >= upTo }) {
		return ErrAborted
	}
	return nil
}

func (p *Producer) spin(pred func() bool) bool {
	for i := 1; ; i++ {
		if pred() {
			return true
		}
		if i%64 == 0 {
			if p.abort != nil && p.abort.Load() != 0 {
				return false
			}
			runtime.Gosched()
		}
	}
}
