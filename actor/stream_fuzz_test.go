package actor

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// FuzzStreamDecode feeds arbitrary payloads, cut into arbitrary pieces,
// to the decoder of messages that arrive in pieces (streamDec), and
// checks it against the whole-payload decoder of messages that fit one
// frame (decodePayload): neither may panic or allocate far beyond the
// payload's size, and both must accept the same payloads and decode them
// to the same value. cuts gives the pieces' lengths, a byte each (0 is a
// piece of 256 bytes), repeated while payload lasts.
func FuzzStreamDecode(f *testing.F) {
	for _, m := range []any{
		&fuzzMsg{B: []byte("bytes"), S: "str", L: []int64{1, 2, 3}, M: map[string]int{"k": 7}},
		&fuzzMsg{B: pattern(3000, 7), L: make([]int64, 300)},
		&fuzzMsg{},
	} {
		b, err := msgpack.Marshal(m)
		require.NoError(f, err)
		f.Add(b, []byte{1, 5, 0}, false)
		f.Add(b, []byte{0}, true)
	}
	// Hostile lengths: a 4 GiB bin32, a 2^32-1 element array32, a map32.
	f.Add([]byte{0x81, 0xa1, 'B', 0xc6, 0xff, 0xff, 0xff, 0xff}, []byte{3}, false)
	f.Add([]byte{0x81, 0xa1, 'L', 0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{2}, false)
	f.Add([]byte{0x81, 0xa1, 'M', 0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'k'}, []byte{1}, false)
	registered, ok := RegisteredName(&fuzzMsg{})
	require.True(f, ok)
	name := []byte(registered)
	mt := typeByName(name)
	require.NotNil(f, mt)
	f.Fuzz(func(t *testing.T, payload, cuts []byte, value bool) {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)

		w := wireMsg{typeName: name, payload: payload}
		if value {
			w.flags |= fValue
		}
		var rd bytesReader
		var cache typeCache
		whole, wholeErr := decodePayload(&w, msgpack.NewDecoder(&rd), &rd, &cache)

		s := newStreamDec(mt, value, len(payload))
		var streamErr error
		rest := payload
		for i := 0; streamErr == nil && (len(rest) > 0 || i == 0); i++ {
			n := 256
			if len(cuts) > 0 {
				if c := int(cuts[i%len(cuts)]); c > 0 {
					n = c
				}
			}
			n = min(n, len(rest))
			streamErr = s.feed(rest[:n], n == len(rest))
			rest = rest[n:]
		}
		if streamErr != nil || !s.done {
			s.stop()
		}

		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		// Every length the payload declares was checked against the bytes
		// present, so what the decoders hold stays within a few tens of
		// bytes per payload byte (a one-byte element of a []int64 takes 8,
		// a map entry more), both decoders together.
		limit := 256*uint64(len(payload)) + 1<<20
		require.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, limit,
			"allocated for a %d-byte payload", len(payload))

		if wholeErr != nil {
			require.Error(t, streamErr, "the whole decoder refused it (%v), the stream decoder did not", wholeErr)
			return
		}
		require.NoError(t, streamErr, "the whole decoder took it, the stream decoder did not")
		require.True(t, s.done)
		require.Equal(t, whole, s.msg)
	})
}
