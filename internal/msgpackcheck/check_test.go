package msgpackcheck

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

type sample struct {
	B []byte
	S string
	L []int64
	M map[string]int
}

// Declared lengths past the frame are refused before any decoder
// allocates: each of these bodies is a few bytes.
func TestRefusesLengths(t *testing.T) {
	for name, b := range map[string][]byte{
		"bin32 of 4 GiB":          {0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2, 3},
		"str32 of 4 GiB":          {0xdb, 0xff, 0xff, 0xff, 0xff},
		"array32 of 2^32-1 ints":  {0xdd, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4},
		"map32 of 2^32-1 pairs":   {0xdf, 0xff, 0xff, 0xff, 0xff, 1, 2},
		"nested arrays":           {0x91, 0x91, 0x91, 0xdc, 0xff, 0xff},
		"ext32 past the end":      {0xc9, 0, 0, 1, 0, 7},
		"truncated length":        {0xc5, 0x01},
		"unused type byte 0xc1":   {0xc1},
		"fixarray missing values": {0x93, 1, 2},
	} {
		require.Error(t, Check(b), name)
	}
	var buf bytes.Buffer
	require.NoError(t, msgpack.NewEncoder(&buf).Encode(&sample{B: []byte("x"), S: "y", L: []int64{1, -2, 1 << 40}, M: map[string]int{"a": 1}}))
	require.NoError(t, Check(buf.Bytes()))
}
