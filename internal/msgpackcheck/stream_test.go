package msgpackcheck

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// feedSplit feeds b to a Stream in pieces of size bytes.
func feedSplit(b []byte, size int) error {
	s := NewStream(len(b))
	for len(b) > 0 {
		k := min(size, len(b))
		if err := s.Feed(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return s.End()
}

// Fed in pieces of any size, a Stream refuses what Check refuses and
// accepts what it accepts.
func TestStreamAgreesWithCheck(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, msgpack.NewEncoder(&buf).Encode(&sample{B: make([]byte, 300), S: "y", L: []int64{1, -2, 1 << 40}, M: map[string]int{"a": 1}}))
	cases := map[string][]byte{
		"sample":                  buf.Bytes(),
		"bin32 of 4 GiB":          {0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"str32 of 4 GiB":          {0xdb, 0xff, 0xff, 0xff, 0xff},
		"array32 of 2^32-1 ints":  {0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4},
		"map32 of 2^32-1 pairs":   {0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2},
		"nested arrays":           {0x91, 0x91, 0x91, 0xdc, 0xff, 0xff},
		"ext32 past the end":      {0xc9, 0, 0, 1, 0, 7},
		"truncated length":        {0xc5, 0x01},
		"unused type byte 0xc1":   {0xc1},
		"fixarray missing values": {0x93, 1, 2},
	}
	for name, b := range cases {
		want := Check(b)
		for _, size := range []int{1, 2, 3, 5, 7, 64, len(b)} {
			got := feedSplit(b, size)
			require.Equal(t, want == nil, got == nil, "%s in pieces of %d: Check %v, Stream %v", name, size, want, got)
		}
	}
}

// Bytes past the declared total are refused.
func TestStreamRefusesExtraBytes(t *testing.T) {
	s := NewStream(2)
	require.NoError(t, s.Feed([]byte{0x91}))
	require.ErrorIs(t, s.Feed([]byte{1, 2}), ErrLength)
}
