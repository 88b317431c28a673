package moe

import "fmt"

// Sizes are the dimensions a dispatch/combine buffer is sized by, the
// arguments of DeepEP's deep_ep.Buffer that both Config and gpumoe.Config
// embed.
type Sizes struct {
	// Hidden is the number of elements of a token row (7168 in
	// DeepSeek-V3).
	Hidden int
	// TopK is the number of experts each token chooses (8 in DeepSeek-V3).
	TopK int
	// NumExperts is the number of experts, a multiple of the world size:
	// rank r holds experts [r*L, (r+1)*L) with L = NumExperts/size.
	NumExperts int
	// MaxTokens is the most tokens a rank passes to one Dispatch (normal
	// mode); it sizes the normal-mode buffers. 0: no normal mode.
	MaxTokens int
	// MaxLLTokens is the most tokens a rank passes to one DispatchLL (low
	// latency); it sizes the low-latency buffers. 0: no low-latency mode.
	// DeepEP uses the low-latency kernels up to 128 tokens per rank; so
	// should callers.
	MaxLLTokens int
}

// Check returns an error matching ErrBadArgument unless the sizes are
// positive, NumExperts is a multiple of n ranks (n > 0), and at least one
// mode has tokens, none negative. Upper bounds are each handle's own.
func (s Sizes) Check(n int) error {
	switch {
	case n <= 0:
		return fmt.Errorf("%d ranks: %w", n, ErrBadArgument)
	case s.Hidden <= 0 || s.TopK <= 0 || s.NumExperts <= 0:
		return fmt.Errorf("hidden %d, top-k %d, %d experts: want positive: %w", s.Hidden, s.TopK, s.NumExperts, ErrBadArgument)
	case s.NumExperts%n != 0:
		return fmt.Errorf("%d experts over %d ranks: want a multiple: %w", s.NumExperts, n, ErrBadArgument)
	case s.MaxTokens < 0 || s.MaxLLTokens < 0 || s.MaxTokens+s.MaxLLTokens == 0:
		return fmt.Errorf("max tokens %d, low-latency %d: want one positive, none negative: %w", s.MaxTokens, s.MaxLLTokens, ErrBadArgument)
	}
	return nil
}
