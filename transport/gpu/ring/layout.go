package ring

// Offsets and codes from impl/gin__types.cuh (the device twin); the device
// test TestLayoutTwin checks them against the compiled header.
const (
	DevReserved = 0   // RingDevReserved
	DevReady    = 64  // RingDevReady
	DevBytes    = 128 // RingDevBytes

	HostDoorbell  = 0   // RingDoorbell
	HostConsumed  = 64  // RingConsumed
	HostCompleted = 128 // RingCompleted
	HostStatus    = 192 // RingStatus
	HostEntries   = 256 // RingEntries

	WQEBytes = 64 // WQEBytes
)

// WQE field offsets (WQE* in the header).
const (
	offTag          = 0
	offOp           = 4
	offRemote       = 5
	offLocal        = 6
	offValueSize    = 7
	offPeer         = 8
	offSignal       = 12
	offDstWindow    = 16
	offSrcWindow    = 20
	offCounter      = 24
	offDstOff       = 32
	offSrcOff       = 40
	offBytesOrValue = 48
	offSignalValue  = 56
)

// Op is what a WQE asks the proxy to do.
type Op uint8

const (
	OpNop      Op = 0 // fills nothing; never written by kernels
	OpPut      Op = 1 // gin Put
	OpPutValue Op = 2 // gin PutValue
	OpSignal   Op = 3 // gin Signal
	OpGet      Op = 4 // gin Get
)

// Remote is the WQE's remote action.
type Remote uint8

const (
	RemoteNone Remote = 0
	RemoteInc  Remote = 1 // SignalInc
	RemoteAdd  Remote = 2 // SignalAdd
)

// HostBytes is the size of a ring's host part for depth entries.
func HostBytes(depth int) int { return HostEntries + depth*WQEBytes }
