package rdma

import "testing"

// TestSignalLayout checks the size-only inverses (PairedModeOff,
// SignalCount) against the forward layout for every n a Comm may use, and
// that sizes of no layout are refused.
func TestSignalLayout(t *testing.T) {
	sizes := map[int]bool{}
	for n := 1; n <= 4096; n++ {
		size := SignalRegionSize(n)
		sizes[size] = true
		if got, ok := SignalCount(size); !ok || got != n {
			t.Fatalf("SignalCount(%d) = %d, %v; want %d (n = %d)", size, got, ok, n, n)
		}
		for _, s := range []int{0, n / 2, n - 1} {
			if got, want := PairedModeOff(size, 8*s), SignalModeOff(n, s); got != want {
				t.Fatalf("n %d, signal %d: PairedModeOff = %d, SignalModeOff = %d", n, s, got, want)
			}
		}
		if base := SignalModeOff(n, 0); base < 8*n || base%64 != 0 {
			t.Fatalf("n %d: mode words at %d overlap the values or are not line-aligned", n, base)
		}
	}
	for size := 0; size <= SignalRegionSize(4096); size++ {
		if _, ok := SignalCount(size); ok != sizes[size] {
			t.Fatalf("SignalCount(%d) reports %v", size, ok)
		}
	}
}
