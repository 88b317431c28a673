//go:build !linux

package actor

// populate does nothing where madvise(MADV_POPULATE_WRITE) is not offered:
// the copies fault the pages in.
func populate(b []byte) {}
