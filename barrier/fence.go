package barrier

import (
	"context"
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
)

// Fence says what a Sync orders besides arrival: NCCL's ncclGinFenceLevel
// (None, Put, Get; nccl_device/gin_barrier.h, NCCL 2.32), plus FenceFlush.
// Fences may be combined (FencePut|FenceGet) and may differ between ranks
// and between calls; each covers what this rank issued on the session's
// context before calling Sync.
type Fence uint8

const (
	// FenceNone orders arrival only. With strong signals (shm, verbs RC),
	// every put this rank issued on the session's context to a peer
	// before Sync is visible at that peer once the peer's Sync returns
	// anyway: the arrival signal to that peer implies it (gin/doc.go,
	// "What a signal promises"). Puts to this rank itself are not covered,
	// nor are gets.
	FenceNone Fence = 0
	// FencePut also signals and waits for this rank's own slot, so puts
	// this rank issued to itself (loopback) on the context are visible
	// when Sync returns too: every put issued before any rank's Sync on
	// the context is visible at its target after the barrier
	// (ncclGinFenceLevel::Put, NCCL 2.32, which includes the caller's own
	// slot the same way). It relies on strong signals
	// (gin.Config.Require.StrongSignals).
	FencePut Fence = 1 << iota
	// FenceFlush flushes the context (gin.Context.Flush) before arriving:
	// the sources of every earlier put may be reused when Sync returns,
	// and every earlier get has landed before this rank arrives, so a peer
	// may overwrite what this rank read once the peer's Sync returns. Like
	// gin's Flush it says nothing about the peers.
	FenceFlush
	// FenceGet: every get this rank issued on the context before Sync has
	// completed when Sync returns, its bytes in the local window
	// (ncclGinFenceLevel::Get, NCCL 2.32). As in NCCL the completion is
	// awaited after the arrivals, so peers do not wait for this rank's
	// gets: the barrier does not promise the peers that those reads are
	// done, and a peer that overwrites a get's source right after its own
	// Sync may race with the read. Use FenceFlush where it must not.
	FenceGet
)

// getFence is FenceGet's flush point, taken when Sync starts and awaited
// once every arrival is seen; nil when the fence does not ask for it.
type getFence struct {
	h *gin.FlushHandle
}

// enter does a Sync's work before arriving: FenceFlush's flush, or the
// flush point of FenceGet (taken here so that only the gets issued
// before Sync are covered, and awaited after the arrivals so that their
// completion overlaps the barrier's latency, as NCCL 2.32 orders it).
func enter(ctx context.Context, x *gin.Context, index uint32, fence Fence) (getFence, error) {
	if fence&FenceFlush != 0 {
		if err := x.Flush(ctx); err != nil {
			return getFence{}, fmt.Errorf("barrier %d: flush: %w", index, err)
		}
		return getFence{}, nil // the flush covered the gets too
	}
	if fence&FenceGet != 0 {
		return getFence{h: x.FlushAsync()}, nil
	}
	return getFence{}, nil
}

// wait completes FenceGet: the gets issued before Sync have landed.
func (g getFence) wait(ctx context.Context, index uint32) error {
	if g.h == nil {
		return nil
	}
	if err := g.h.Wait(ctx); err != nil {
		return fmt.Errorf("barrier %d: get fence: %w", index, err)
	}
	return nil
}
