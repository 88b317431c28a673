package rdma

// Config is what a provider needs to know about its rank when it opens.
type Config struct {
	Rank int // this process's world rank, 0 <= Rank < Size
	Size int // world size
	// Job is a name shared by every rank of one job and unique per job; it
	// names shared-memory files and the like, so it is 1-200 characters of
	// [A-Za-z0-9._-].
	Job string
	// Hosts is each rank's host identity, by world rank (gin gathers them
	// through the bootstrap before it opens the provider: hostname and
	// boot id, or RDMACTOR_HOST_ID); ranks with equal entries share a
	// host. Nil or empty means unknown, which providers read as one host.
	// The "auto" provider (transport/rdma/hybrid) picks shm or ofi per
	// peer from it.
	Hosts []string
}

// SameHost reports whether ranks a and b share a host by Hosts (true
// when Hosts is unknown or either rank lies outside it).
func (c Config) SameHost(a, b int) bool {
	if a < 0 || b < 0 || a >= len(c.Hosts) || b >= len(c.Hosts) {
		return true
	}
	return c.Hosts[a] == c.Hosts[b]
}

// Provider is one rank's NIC. Open one per rank with Open.
//
// A Provider is safe for concurrent use, except that each QP follows the
// caller duties of the package doc.
type Provider interface {
	// Name is the provider's registered name, e.g. "shm".
	Name() string
	// Capabilities reports what this provider supports.
	Capabilities() Capabilities
	// RegisterMemory allocates size bytes of zeroed memory and registers it.
	// Without LocalOnly the region is remotely writable and its Descriptor
	// lets peers Import it; with LocalOnly it may only be a WQE source.
	RegisterMemory(size int, flags RegionFlags) (MemoryRegion, error)
	// Import makes a peer's region (from that peer's Descriptor) a WQE target.
	Import(peer int, desc []byte) (RemoteRegion, error)
	// Connect opens a QP to peer (which may be this rank: loopback). Each
	// completion of a WQE posted on it is reported once to cq.
	Connect(peer int, cq CompletionHandler) (QP, error)
	// Close releases every region, import and QP of this provider.
	Close() error
}

// RegionFlags select how a region is registered.
type RegionFlags uint32

const (
	// LocalOnly: the region is only ever a WQE source (a staging buffer); it
	// is not exported to peers.
	LocalOnly RegionFlags = 1 << iota
)

// ExternalRegistrar is implemented by providers that can register memory
// they did not allocate (fi_mr_reg(3) on the caller's buffer), so that one
// region is reachable through two providers (the "auto" provider
// registers each shm region with ofi too).
type ExternalRegistrar interface {
	// RegisterExternal registers mem, which the caller allocated outside
	// the Go heap (a mapping) and keeps mapped until the provider's Close:
	// the provider never frees it, and a write placed by the NIC may land
	// until then. Flags are RegisterMemory's. onSignal, if not nil, is
	// called after each signal add this provider applies to a word of mem
	// on a peer's behalf (a doorbell's ring), from the provider's progress
	// path; it must not block.
	RegisterExternal(mem []byte, flags RegionFlags, onSignal func()) (MemoryRegion, error)
}

// MemoryRegion is registered local memory.
type MemoryRegion interface {
	// Bytes is the region's local memory; len(Bytes()) is its size.
	Bytes() []byte
	// Descriptor is what a peer passes to Import. Empty for LocalOnly regions.
	Descriptor() []byte
	// Close deregisters the region and releases its memory.
	Close() error
}

// RemoteRegion is a peer's region made addressable by Import.
type RemoteRegion interface {
	// Peer is the owner's world rank.
	Peer() int
	// Size is the region's length in bytes.
	Size() int
	// Close drops the import (unmaps it for shm).
	Close() error
}

// CompletionHandler receives each completion of a QP: wrID is the WQE's
// WrID; err is nil on success. It is called in post order, from inside Post
// (inline providers) or from Progress, never concurrently for one QP.
type CompletionHandler func(wrID uint64, err error)

// QP is an ordered channel to one peer (a reliable-connected queue pair).
type QP interface {
	// Peer is the world rank this QP connects to.
	Peer() int
	// Post hands wqes to the NIC in order: the doorbell. The provider copies
	// what it needs, so the slice may be reused when Post returns. Any error
	// is a *WQEError naming the first WQE not accepted: one that failed
	// validation (bounds, signal mode) has nothing of it written; WQEs
	// before it stay posted and complete. After a QP fault every Post
	// returns a *WQEError wrapping the *QPError.
	Post(wqes []WQE) error
	// Progress drives completions for providers that need it (manual
	// progress) and returns how many it reported. Inline providers return 0.
	Progress() (int, error)
	// Close tears the QP down. Completions not yet reported are dropped.
	Close() error
}
