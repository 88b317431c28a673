package actor

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// Forged pieces are dropped without allocating what they declare.
func TestChunkForgeries(t *testing.T) {
	// Alone: no peer frame touches its receive state meanwhile.
	n := startInternal(t, 1)[0]
	n.recvChunk(0, piece(kindUser, 1, 1<<40, 0, []byte("x")))     // over MaxMessage
	n.recvChunk(0, piece(kindUser, 2, 100, 10, []byte("x")))      // does not start at 0
	n.recvChunk(0, piece(kindUser, 3, 10, 0, make([]byte, 11)))   // more than declared
	n.recvChunk(0, piece(9, 4, 10, 0, []byte("x")))               // not a message kind
	n.recvChunk(0, []byte{kindUser, 0x80})                        // truncated header
	n.recvChunk(0, piece(kindUser, 5, 100, 0, make([]byte, 10)))  // a fair start...
	n.recvChunk(0, piece(kindUser, 5, 100, 50, make([]byte, 10))) // ...then a gap
	require.Empty(t, n.chunks.bySender[0], "a dropped message left state behind")
	require.Zero(t, n.chunks.bytes[0])
}

// piece is a chunk frame's body (recvChunk).
func piece(kind byte, id, total, off uint64, data []byte) []byte {
	b := []byte{kind}
	b = binary.AppendUvarint(b, id)
	b = binary.AppendUvarint(b, total)
	b = binary.AppendUvarint(b, off)
	return append(b, data...)
}

// First pieces of messages that declare a few bytes and never finish open
// no more messages than the sender's bound counts in frames: each costs
// the receiver state whatever it declares.
func TestChunkFloodOfTinyMessages(t *testing.T) {
	n := startInternal(t, 1)[0]
	t.Cleanup(func() { n.forgetChunks(0) })
	most := maxHeldPerSender * n.cfg.MaxMessage / n.mb.Config().MaxFrame
	for id := range uint64(4 * most) {
		n.recvChunk(0, piece(kindUser, id, 2, 0, []byte{0}))
	}
	require.Equal(t, most, len(n.chunks.bySender[0]))
	require.EqualValues(t, most, n.chunks.partials.Load())
	require.Equal(t, maxHeldPerSender*n.cfg.MaxMessage, n.chunks.bytes[0])
	// Ending one makes room for one.
	n.recvChunk(0, piece(chunkAbort, 0, 0, 0, nil))
	n.recvChunk(0, piece(kindUser, uint64(4*most), 2, 0, []byte{0}))
	require.Equal(t, most, len(n.chunks.bySender[0]))
	require.Contains(t, n.chunks.bySender[0], uint64(4*most))
}

// FuzzChunks feeds a lone node's receive state arbitrary sequences of
// chunk frames (each a length byte, then that many body bytes): nothing
// may panic, and the per-sender account must stay true to what is held.
func FuzzChunks(f *testing.F) {
	f.Add([]byte{0x05, kindUser, 1, 10, 0, 'a'})
	f.Add(append([]byte{0x06}, piece(kindUser, 1, 300000, 0, []byte{0, 'x'})...))
	n := startInternal(f, 1)[0]
	f.Fuzz(func(t *testing.T, stream []byte) {
		defer n.forgetChunks(0)
		for len(stream) > 0 {
			k := min(int(stream[0]), len(stream)-1)
			n.recvChunk(0, stream[1:1+k])
			stream = stream[1+k:]
		}
		if n.chunks.bySender == nil { // no piece got far enough to keep state
			require.Zero(t, n.chunks.partials.Load())
			return
		}
		held := 0
		for _, p := range n.chunks.bySender[0] {
			held += n.heldBytes(p.total)
			require.LessOrEqual(t, p.got, p.total)
		}
		require.Equal(t, held, n.chunks.bytes[0])
		require.LessOrEqual(t, held, maxHeldPerSender*n.cfg.MaxMessage)
		require.EqualValues(t, len(n.chunks.bySender[0]), n.chunks.partials.Load())
	})
}
