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

// RollingLE reports a <= b in the rolling order of a counter whose low
// bits m masks (m = 2^bits-1): b is at most half the range ahead of a, so
// the order survives wraparound, x < x+1 even when x+1 overflows. It is
// the comparison of every signal and counter wait (ncclGin::waitSignal,
// nccl_device/gin.h, NCCL 2.28), for layers that read signals themselves.
func RollingLE(a, b, m uint64) bool { return (b-a)&m <= m>>1 }
