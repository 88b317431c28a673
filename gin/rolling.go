package gin

import "fmt"

// mask returns the low-bits mask for a bits-wide comparison; bits must be
// 1..max.
func mask(bits, max int) (uint64, error) {
	if bits < 1 || bits > max {
		return 0, fmt.Errorf("bits %d: want 1..%d: %w", bits, max, ErrBadArgument)
	}
	if bits == 64 {
		return ^uint64(0), nil
	}
	return 1<<uint(bits) - 1, nil
}

// rollingLE reports a <= b in the rolling order of a bits-wide counter with
// mask m: b is at most half the range ahead of a, so the order survives
// wraparound (NCCL's rolling comparison: x < x+1 even when x+1 overflows).
func rollingLE(a, b, m uint64) bool { return (b-a)&m <= m>>1 }
