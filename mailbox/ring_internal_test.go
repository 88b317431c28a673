package mailbox

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sender's and the receiver's ring accounting against each other over
// one plain byte ring, with random frame sizes and credit returned at
// random times: the receiver must find every frame where the sender put
// it, pads included, and the sender may never overrun uncredited bytes.
func TestRingModel(t *testing.T) {
	for _, size := range []uint64{MinRingBytes, 64 << 10} {
		mem := make([]byte, size)
		s, r := newSendRing(size), newRecvRing(size, size/4)
		rng := rand.New(rand.NewPCG(size, 7))
		var queue []uint64 // lengths sent, not yet received
		var pads uint64
		for range 200_000 {
			if rng.IntN(3) != 0 { // send
				n := headerBytes + rng.Uint64N(size/4-headerBytes+1)
				pl := s.place(n)
				if !s.fits(pl.total) {
					// The receiver holds back less than creditEvery: with
					// nothing left to receive, the frame must fit.
					require.NotEmpty(t, queue, "sender waits for credit the receiver holds back")
					continue
				}
				require.LessOrEqual(t, s.used()+pl.total, size)
				if pl.pad >= headerBytes {
					header{len: uint32(pl.pad), kind: kindPad, seq: s.seq}.put(mem[pl.padAt:])
				}
				if pl.pad > 0 {
					pads++
				}
				header{len: uint32(n), kind: 1, seq: s.seq}.put(mem[pl.at:])
				s.commit(pl)
				queue = append(queue, n)
				continue
			}
			if len(queue) == 0 {
				continue
			}
			for { // receive one frame, as next does
				room := r.room()
				if room < headerBytes {
					r.skip(room)
					continue
				}
				h, err := parseFrame(mem[r.head&r.mask:], r.check)
				require.NoError(t, err)
				if h.kind == kindPad {
					r.skip(room)
					continue
				}
				require.Equal(t, queue[0], uint64(h.len))
				r.consume(uint64(h.len))
				queue = queue[1:]
				break
			}
			// Credit as the receive loop returns it: once RingBytes/4 is
			// consumed.
			if r.unreturned >= size/4 {
				require.True(t, s.credit(r.head))
				r.unreturned = 0
			}
		}
		assert.Greater(t, pads, uint64(100), "ring of %d: wrapped too rarely", size)
		assert.False(t, s.credit(s.tail+1), "credit past the tail")
		assert.False(t, s.credit(s.consumed-1), "credit going back")
	}
}

// A frame of MaxFrame after the largest pad still fits once the receiver
// has returned everything but RingBytes/4: the bound that keeps a waiting
// sender from waiting on credit the receiver holds back (doc.go, Credit).
func TestRingCreditBound(t *testing.T) {
	const size = 64 << 10
	s := newSendRing(size)
	s.tail = size - headerBytes - 8             // worst position: just too little room
	s.consumed = s.tail - (size/4 - frameAlign) // unreturned just under the threshold
	pl := s.place(size / 4)
	assert.True(t, s.fits(pl.total), "placement %+v with %d used", pl, s.used())
}

func TestHeaderChecks(t *testing.T) {
	b := make([]byte, 100)
	for i := headerBytes; i < len(b); i++ {
		b[i] = byte(i)
	}
	header{len: 100, kind: 3, seq: 42}.put(b)
	any := func(header) string { return "" }
	h, err := parseFrame(b, any)
	require.NoError(t, err)
	assert.Equal(t, header{len: 100, kind: 3, seq: 42}, h)
	for i := range b { // every flipped bit of header or body is noticed
		c := append([]byte(nil), b...)
		c[i] ^= 0x10
		_, err := parseFrame(c, func(h header) string {
			if uint64(h.len) > uint64(len(c)) {
				return "past the buffer"
			}
			return ""
		})
		assert.Error(t, err, "flipped bit in byte %d went unnoticed", i)
	}
	r := newRecvRing(4096, 1024)
	for _, tc := range []struct {
		h    header
		want string
	}{
		{header{len: 16, kind: 1}, ""},
		{header{len: 1024, kind: 1}, ""},
		{header{len: 1025, kind: 1}, "over the 1024-byte limit"},
		{header{len: 15, kind: 1}, "shorter than its header"},
		{header{len: 16, kind: 1, seq: 1}, "seq 1, want 0"},
		{header{len: 4096, kind: kindPad}, "pad frame at the start of a lap"},
	} {
		assert.Contains(t, r.check(tc.h), tc.want, "%+v", tc.h)
		if tc.want == "" {
			assert.Empty(t, r.check(tc.h))
		}
	}
	r.head = 4096 - 64
	assert.Contains(t, r.check(header{len: 100, kind: 1}), "crosses the ring's end")
	assert.Empty(t, r.check(header{len: 64, kind: kindPad}))
	assert.Contains(t, r.check(header{len: 32, kind: kindPad}), "pad frame of 32 bytes, want 64")
}
