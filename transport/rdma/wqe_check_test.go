package rdma

import (
	"errors"
	"testing"
)

// CheckWord accepts aligned words inside the region and rejects the rest
// with ErrOutOfBounds; RangeError wraps it too.
func TestCheckWord(t *testing.T) {
	for _, c := range []struct {
		off, size int
		ok        bool
	}{{0, 8, true}, {8, 16, true}, {4, 16, false}, {16, 16, false}, {-8, 16, false}, {9, 64, false}} {
		err := CheckWord("signal", c.off, c.size)
		if c.ok != (err == nil) {
			t.Fatalf("CheckWord(%d, %d) = %v, want ok %v", c.off, c.size, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrOutOfBounds) {
			t.Fatalf("CheckWord(%d, %d) = %v: not ErrOutOfBounds", c.off, c.size, err)
		}
	}
	if err := RangeError("put", 4, 8, 8); !errors.Is(err, ErrOutOfBounds) {
		t.Fatalf("RangeError = %v: not ErrOutOfBounds", err)
	}
}
