package actor

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// Forged pieces are dropped without allocating what they declare.
func TestChunkForgeries(t *testing.T) {
	n := startInternal(t, 1)[0] // alone: no peer frame touches its receive state meanwhile
	piece := func(kind byte, id, total, off uint64, data []byte) []byte {
		b := []byte{kind}
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, total)
		b = binary.AppendUvarint(b, off)
		return append(b, data...)
	}
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
