package rdma

// Capabilities says what a provider can do; gin checks a Comm's
// requirements against it at creation and reports what is missing.
type Capabilities struct {
	// StrongSignals: when a signal add is visible at the peer, the data of
	// every earlier WQE posted to that peer on the same QP is visible too
	// (NCCL's default signal semantics). Providers without it offer weak
	// signals: only the data of the WQE carrying the signal is implied.
	StrongSignals bool
	// MaxSignals is the largest signal count a Comm may ask for.
	MaxSignals int
	// MaxPutSize is the largest Len of one WQE in bytes.
	MaxPutSize int
	// SignalAdd: arbitrary add values are supported (not only +1 per write).
	SignalAdd bool
	// VASignals: signals may be words at any 8-byte aligned offset of a
	// window (gin's VA signals, ncclGin's VA signal variants, NCCL 2.28),
	// not only indexed signals.
	VASignals bool
	// LoadStore: peers' memory is directly load/store accessible (shared
	// memory, NVLink): the LSA team of gin spans every rank this provider
	// connects on one host.
	LoadStore bool
	// Get: OpRead is supported, a one-sided read of a peer's region
	// (gin's Get; ncclGin::get, NCCL 2.30 device API).
	Get bool
	// Inline: WQEs execute inside Post (at the doorbell), so a completion is
	// reported before Post returns and Progress never has work.
	Inline bool
}
