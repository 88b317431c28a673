package barrier

// Fence says what a Sync orders besides arrival. Fences may be combined
// (FencePut|FenceFlush) and may differ between ranks and between calls.
type Fence uint8

const (
	// FenceNone orders arrival only. With strong signals (shm, verbs RC),
	// every put this rank issued on the session's context to a peer
	// before Sync is visible at that peer once the peer's Sync returns
	// anyway: the arrival signal to that peer implies it (gin/doc.go,
	// "What a signal promises"). Puts to this rank itself are not covered.
	FenceNone Fence = 0
	// FencePut also signals and waits for this rank's own slot, so puts
	// this rank issued to itself (loopback) on the context are visible
	// when Sync returns too: every put issued before any rank's Sync on
	// the context is visible at its target after the barrier. It relies
	// on strong signals (gin.Config.Require.StrongSignals).
	FencePut Fence = 1 << iota
	// FenceFlush flushes the context (gin.Context.Flush) before arriving:
	// the sources of every earlier put may be reused when Sync returns.
	// Like gin's Flush it says nothing about the peers.
	FenceFlush
)
