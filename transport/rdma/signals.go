package rdma

// The layout of a signals region, as gin registers it: n 64-bit signal
// value words, padded to a 64-byte cache line, then the n mode words (so a
// peer spinning on a value word does not share its line with the mode
// words senders check):
//
//	0        8·n   base = 64·⌈n/8⌉            base + 8·n
//	| values | pad | modes                      |
//
// It is defined here, below gin, because providers that apply signals at
// the target (ofi's cqdata immediate words, its counter strategy) find the
// mode word paired with a value word, or the signal count, from the region
// alone, without a WQE field to carry it.

// SignalRegionSize is the size in bytes of a signals region of n signals.
func SignalRegionSize(n int) int { return signalModeBase(n) + 8*n }

// SignalModeOff is the byte offset of signal s's mode word in a signals
// region of n signals.
func SignalModeOff(n, s int) int { return signalModeBase(n) + 8*s }

func signalModeBase(n int) int { return (8*n + 63) &^ 63 }

// PairedModeOff is the byte offset of the mode word paired with the value
// word at byte offset off in a signals region of size bytes
// (SignalRegionSize(n) for some n; the size alone determines the mode
// words' base: size lies in (128·k − 64, 128·k] for base 64·k).
func PairedModeOff(size, off int) int { return 64*((size+127)/128) + off }

// SignalCount returns n when size is SignalRegionSize(n) for some n >= 1,
// and false otherwise.
func SignalCount(size int) (int, bool) {
	base := 64 * ((size + 127) / 128)
	n := (size - base) / 8
	if n < 1 || SignalRegionSize(n) != size {
		return 0, false
	}
	return n, true
}
