// Package affinity reads and sets which processors a thread may run on
// (sched_getaffinity(2), sched_setaffinity(2)), for the launcher's binding,
// gin's count of a host's processors and the examples' pinning, in one
// place.
package affinity

import "errors"

// ErrUnsupported is returned where the OS has no CPU affinity (not Linux).
var ErrUnsupported = errors.New("CPU affinity is not supported here")

// Bitmap writes cpus as a bitmap, bit i%8 of byte i/8 for processor i.
func Bitmap(cpus []int) []byte {
	var b []byte
	for _, c := range cpus {
		for len(b) <= c/8 {
			b = append(b, 0)
		}
		b[c/8] |= 1 << (c % 8)
	}
	return b
}
