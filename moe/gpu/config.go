package gpumoe

import (
	"fmt"

	"github.com/rdmactor/rdmactor/moe"
)

// Config sizes a Handle. Every rank passes an equal Config to New.
type Config struct {
	// Sizes are the buffer dimensions: Hidden counts bf16 elements, any
	// positive size (rows are stored with a stride of Hidden*2 rounded up
	// to 16 bytes, RowStride); TopK is at most 32 and NumExperts at most
	// 4096.
	moe.Sizes
	// FP8 makes DispatchLL carry each row as FP8 e4m3 with one float32
	// scale per 128 channels (DeepEP's low-latency use_fp8): half the
	// bytes. Combine always returns bf16.
	FP8 bool
	// Signal0 is the first device signal (gpu.Config.Signals) the Handle
	// uses; it takes Signals(size, cfg) of them from there and resets them
	// in New.
	Signal0 int
	// Blocks is the grid of the data kernels, at most one 1024-thread
	// block per SM (kernels that wait need every block resident), at least
	// the number of ranks; default and maximum: the device's SM count.
	// The normal-mode dispatch runs twice as many blocks of 512 threads.
	// Every rank uses the smallest grid of all ranks.
	Blocks int
}

// maxRanks bounds the world: a token's ranks are a 32-bit mask, and a
// warp's lanes hold one source each in the reductions.
const maxRanks = 32

// maxTopK bounds TopK: a warp's lanes hold one (token, k) each.
const maxTopK = 32

// maxExperts bounds NumExperts: the layout and the low-latency dispatch
// keep a count per expert in shared memory (4 bytes each, within 48 KiB).
const maxExperts = 4096

// Signals is the number of device signals a Handle over size ranks takes
// from Config.Signal0: per source rank a count, a data and a combine
// signal, and a low-latency combine signal (plan.go: signals).
// It does not depend on cfg today; it takes it so that a layout that does
// needs no new call.
func Signals(size int, cfg Config) int {
	if size <= 0 {
		return 0
	}
	return 4 * size
}

func (c *Config) check(n int) error {
	if n <= 0 || n > maxRanks {
		return fmt.Errorf("gpumoe: %d ranks: want 1..%d: %w", n, maxRanks, moe.ErrBadArgument)
	}
	if err := c.Sizes.Check(n); err != nil {
		return fmt.Errorf("gpumoe: %w", err)
	}
	switch {
	case c.TopK > maxTopK:
		return fmt.Errorf("gpumoe: top-%d: want at most %d: %w", c.TopK, maxTopK, moe.ErrBadArgument)
	case c.Hidden > 1<<20 || c.NumExperts > maxExperts || c.MaxTokens > 1<<20 || c.MaxLLTokens > 1<<16:
		return fmt.Errorf("gpumoe: sizes too large: %w", moe.ErrBadArgument)
	case c.Signal0 < 0 || c.Blocks < 0:
		return fmt.Errorf("gpumoe: signal0 %d, blocks %d: %w", c.Signal0, c.Blocks, moe.ErrBadArgument)
	}
	return nil
}
