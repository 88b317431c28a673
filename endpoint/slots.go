package endpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// slotBytes is the size of one PutValue staging slot: the largest value
// (8 bytes, as ncclGin::putValue).
const slotBytes = 8

// slotPool hands each endpoint its slice of a registered staging region (as
// the aws-ofi-nccl EFA-GDA backend: "one contiguous region ... each endpoint
// owns its own slice, single MR"). A slice has one slot per SQ entry, so
// slot seq%depth is free exactly when SQ entry seq is (the SQ's room check
// guards both). Regions are registered in chunks of slicesPerRegion slices,
// as endpoints appear.
type slotPool struct {
	prov    rdma.Provider
	depth   int
	mu      sync.Mutex // guards regions and next
	regions []rdma.MemoryRegion
	next    int // slices used in the last region
}

const slicesPerRegion = 64

func (p *slotPool) sliceBytes() int { return p.depth * slotBytes }

// take returns a new slice: its region and byte offset.
func (p *slotPool) take() (rdma.MemoryRegion, int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.regions) == 0 || p.next == slicesPerRegion {
		mr, err := p.prov.RegisterMemory(slicesPerRegion*p.sliceBytes(), rdma.LocalOnly)
		if err != nil {
			return nil, 0, fmt.Errorf("register PutValue slot region: %w", err)
		}
		p.regions = append(p.regions, mr)
		p.next = 0
	}
	off := p.next * p.sliceBytes()
	p.next++
	return p.regions[len(p.regions)-1], off, nil
}

func (p *slotPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, mr := range p.regions {
		errs = append(errs, mr.Close())
	}
	p.regions = nil
	return errors.Join(errs...)
}

// stage writes the low size bytes of v into b, little-endian (the byte
// order of every platform rdmactor runs on, and of CUDA devices).
func stage(b []byte, v uint64, size int) {
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	default:
		binary.LittleEndian.PutUint64(b, v)
	}
}
