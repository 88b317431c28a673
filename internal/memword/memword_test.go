package memword

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aligned8 returns n >= 8 bytes starting at an 8-byte aligned address.
func aligned8(n int) []byte {
	buf := make([]byte, n+8)
	for i := range 8 {
		if Aligned(buf[i:], 0) {
			return buf[i : i+n]
		}
	}
	panic("no aligned offset in 8 consecutive bytes")
}

func TestUint64(t *testing.T) {
	b := aligned8(32)
	w := Uint64(b, 8)
	w.Store(0x0102030405060708)
	assert.Equal(t, uint64(0x0102030405060708), binary.NativeEndian.Uint64(b[8:]))
	assert.Equal(t, uint64(0x0102030405060709), w.Add(1))
	assert.True(t, Uint64(b, 24).CompareAndSwap(0, 7))
	assert.Equal(t, uint64(7), binary.NativeEndian.Uint64(b[24:]))
}

func TestUint64Panics(t *testing.T) {
	b := aligned8(32)
	for _, tc := range []struct {
		name string
		b    []byte
		off  int
	}{
		{"negative", b, -8},
		{"past end", b, 32},
		{"straddles end", b, 25},
		{"huge", b, int(^uint(0) >> 1)},
		{"misaligned", b, 3},
		{"short slice", b[:7], 0},
		{"nil", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.False(t, Aligned(tc.b, tc.off))
			require.Panics(t, func() { Uint64(tc.b, tc.off) })
		})
	}
}
