package actor

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/rdmactor/rdmactor/actor/internal/genmsg"
)

// fuzzMsg has the shapes a hostile length targets: bytes, a string, a
// slice of integers and a map.
type fuzzMsg struct {
	B []byte
	S string
	L []int64
	M map[string]int
}

func init() {
	RegisterMessage[fuzzMsg]()
	RegisterMessage[genmsg.Msg]()
}

// FuzzDecodeBody feeds arbitrary frame bodies to what the receive loop
// runs on a user frame: nothing may panic, and no body may make the
// decoder allocate far beyond its own size (the fuzzer's memory limit
// catches a 4 GiB allocation).
func FuzzDecodeBody(f *testing.F) {
	for _, msg := range []any{
		&fuzzMsg{B: []byte("bytes"), S: "str", L: []int64{1, 2, 3}, M: map[string]int{"k": 7}},
		&genmsg.Msg{Seq: 9, Data: []byte("gen"), Name: "n"},
		fuzzMsg{},
	} {
		e := getEncoder()
		require.NoError(f, e.message(&PID{Address: "rdmactor:1", Id: "sink"}, &PID{Address: "rdmactor:0", Id: "src"}, map[string]string{"h": "v"}, msg))
		f.Add(append([]byte(nil), e.buf...))
		putEncoder(e)
	}
	// A registered type with a 4 GiB bin32 declared in 5 bytes.
	hostile := []byte{0}
	name := "github.com/rdmactor/rdmactor/actor.fuzzMsg"
	hostile = binary.AppendUvarint(hostile, 4)
	hostile = append(hostile, "sink"...)
	hostile = binary.AppendUvarint(hostile, uint64(len(name)))
	hostile = append(hostile, name...)
	hostile = append(hostile, 0x81, 0xa1, 'B', 0xc6, 0xff, 0xff, 0xff, 0xff)
	f.Add(hostile)
	f.Fuzz(func(t *testing.T, body []byte) {
		w, err := parseMessage(body)
		if err != nil {
			return
		}
		var rd bytesReader
		var cache typeCache
		dec := msgpack.NewDecoder(&rd)
		decodePayload(&w, dec, &rd, &cache)
	})
}
