package gpu

import "encoding/binary"

// Layouts shared with impl/gin__types.cuh; the device test TestLayoutTwin
// compiles the header and compares its offsetof/sizeof with these.

// DevComm is the communicator as kernels take it: 128 bytes passed by value
// (struct rdmactor::impl::DevComm). Get it from Comm.DevComm and pass it as
// a kernel argument.
type DevComm [devCommBytes]byte

// KernelArg makes DevComm a by-value kernel argument (cuda.KernelArg).
func (d DevComm) KernelArg() []byte { return d[:] }

const (
	devCommBytes    = 128
	windowDescBytes = 32
	ringDescBytes   = 32
)

// DevComm field offsets.
const (
	dcRank        = 0
	dcSize        = 4
	dcLSASize     = 8
	dcPath        = 12
	dcNSignals    = 16
	dcNCounters   = 20
	dcNBarriers   = 24
	dcNContexts   = 28
	dcSignals     = 32
	dcPeerSignals = 40
	dcCounters    = 48
	dcShadows     = 56
	dcAbortFlag   = 64
	dcStatus      = 72
	dcRings       = 80
)

// devPath values (impl::PathLSA, impl::PathProxy).
const (
	devPathLSA   = 0
	devPathProxy = 1
)

type devComm struct {
	rank, size, lsaSize, path                 int32
	nSignals, nCounters, nBarriers, nContexts int32
	signals, peerSignals, counters, shadows   uint64
	abortFlag, status, rings                  uint64
}

func (d devComm) encode() DevComm {
	var b DevComm
	le := binary.LittleEndian
	for off, v := range map[int]int32{dcRank: d.rank, dcSize: d.size, dcLSASize: d.lsaSize, dcPath: d.path,
		dcNSignals: d.nSignals, dcNCounters: d.nCounters, dcNBarriers: d.nBarriers, dcNContexts: d.nContexts} {
		le.PutUint32(b[off:], uint32(v))
	}
	for off, v := range map[int]uint64{dcSignals: d.signals, dcPeerSignals: d.peerSignals, dcCounters: d.counters,
		dcShadows: d.shadows, dcAbortFlag: d.abortFlag, dcStatus: d.status, dcRings: d.rings} {
		le.PutUint64(b[off:], v)
	}
	return b
}

// windowDesc (struct WindowDesc): size @0, local @8, peers @16, id @24, flags @28.
func encodeWindowDesc(size, local, peers uint64, id uint32) []byte {
	b := make([]byte, windowDescBytes)
	le := binary.LittleEndian
	le.PutUint64(b[0:], size)
	le.PutUint64(b[8:], local)
	le.PutUint64(b[16:], peers)
	le.PutUint32(b[24:], id)
	return b
}

// ringDesc (struct RingDesc): dev @0, host @8, depth @16.
func encodeRingDesc(dev, host uint64, depth uint32) []byte {
	b := make([]byte, ringDescBytes)
	le := binary.LittleEndian
	le.PutUint64(b[0:], dev)
	le.PutUint64(b[8:], host)
	le.PutUint32(b[16:], depth)
	return b
}

// encodeU64s lays out a table of device pointers.
func encodeU64s(vs []uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}
