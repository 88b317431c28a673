package barrier

import (
	"context"
	"fmt"
	"time"
)

// broken latches the failure that broke a session (ErrBroken): after a
// failed Sync its slots and shadows no longer agree with its peers'. Both
// barrier kinds hold one.
type broken struct {
	err error
}

// run runs sync on session index unless an earlier run failed, and
// latches sync's failure.
func (b *broken) run(index uint32, sync func() error) error {
	if b.err != nil {
		return fmt.Errorf("barrier %d: %w: %v", index, ErrBroken, b.err)
	}
	if err := sync(); err != nil {
		b.err = err
		return err
	}
	return nil
}

// runArrivalOnly is run for a barrier that orders arrival only
// (dissemination, hierarchical): FencePut is refused with ErrFence before
// anything is posted, and does not break the session.
func (b *broken) runArrivalOnly(index uint32, kind string, fence Fence, sync func() error) error {
	if fence&FencePut != 0 {
		return fmt.Errorf("barrier %d: FencePut on a %s barrier: %w", index, kind, ErrFence)
	}
	return b.run(index, sync)
}

// compareBits is how many low bits of a slot a wait compares: all 64 in
// the first Sync after WithEpoch (wide), 32 otherwise.
func compareBits(wide bool) int {
	if wide {
		return 64
	}
	return 32
}

// syncTimeout is s.Sync with a wait of at most d (besides ctx's own end):
// every kind's SyncTimeout.
func syncTimeout(ctx context.Context, s Syncer, fence Fence, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return s.Sync(ctx, fence)
}
