package actor

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rdmactor/rdmactor/actor/internal/genmsg"
)

// Large messages of the test: by reflection (bigRefl, also sent as a
// value), with custom methods that can fail or change size on purpose
// (bigCustom), and generated (genmsg.Msg).
type (
	bigRefl struct {
		Name string
		Data []byte
		More []uint32
	}
	bigCustom struct {
		Data []byte
		// FailAt makes EncodeMsgpack fail after writing that many bytes
		// of Data (when > 0); Grow makes it write Grow bytes more on its
		// third encoding (a send tries one frame, counts, then streams).
		FailAt, Grow int
		encodings    int
	}
)

func (m *bigCustom) EncodeMsgpack(e *msgpack.Encoder) error {
	m.encodings++
	data := m.Data
	if m.encodings == 3 && m.Grow > 0 {
		data = append(bytes.Clone(m.Data), make([]byte, m.Grow)...)
	}
	if m.FailAt > 0 {
		if err := e.EncodeBytesLen(len(data)); err != nil {
			return err
		}
		if _, err := e.Writer().Write(data[:m.FailAt]); err != nil {
			return err
		}
		return errors.New("failed on purpose")
	}
	return e.EncodeBytes(data)
}

func (m *bigCustom) DecodeMsgpack(d *msgpack.Decoder) (err error) {
	m.Data, err = d.DecodeBytes()
	return err
}

func init() {
	RegisterMessage[bigRefl]()
	RegisterMessage[bigCustom]()
	RegisterMessage[genmsg.Msg]()
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*seed + i>>9)
	}
	return b
}

// Messages over a frame cross whole with every codec and form: decoded
// piece by piece (reflection, custom methods, as a value and with a
// sender and headers), or put together (generated, protobuf).
func TestLargeCodecs(t *testing.T) {
	nodes := startInternal(t, 2)
	got := make(chan any, 8)
	_, err := nodes[1].SpawnNamed(PropsFromFunc(func(c Context) {
		switch m := c.Message().(type) {
		case *bigRefl, bigRefl, *bigCustom, *genmsg.Msg, *wrapperspb.BytesValue:
			got <- m
			if c.Sender() != nil {
				c.Respond(&inPing{N: len(c.MessageHeader().Get("k"))})
			}
		}
	}), "sink")
	require.NoError(t, err)
	target := nodes[0].PID(1, "sink")
	size := 3<<20 + 12345
	refl := &bigRefl{Name: "r", Data: pattern(size, 7), More: make([]uint32, 100000)}
	for i := range refl.More {
		refl.More[i] = uint32(i * 3)
	}
	for _, m := range []any{refl, *refl, &bigCustom{Data: pattern(size, 5)}, &genmsg.Msg{Seq: 9, Data: pattern(size, 3), Name: "g"},
		wrapperspb.Bytes(pattern(size, 11))} {
		require.NoError(t, nodes[0].Tell(target, m), "%T", m)
		select {
		case g := <-got:
			require.Equal(t, fingerprint(m), fingerprint(g), "%T", m)
		case <-time.After(30 * time.Second):
			t.Fatalf("a large %T never arrived", m)
		}
	}
	// A message with a sender and headers: the prelude that says so
	// rides the first piece.
	answers := make(chan int, 1)
	reply := nodes[0].Spawn(PropsFromFunc(func(c Context) {
		if m, ok := c.Message().(*inPing); ok {
			answers <- m.N
		}
	}))
	nodes[0].Root().Send(target, &MessageEnvelope{Header: map[string]string{"k": "vvv"}, Message: refl, Sender: reply})
	select {
	case n := <-answers:
		require.Equal(t, 3, n)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer to the message with a sender")
	}
	<-got
	requireNoPartials(t, nodes[1])
}

// fingerprint sums up a test message: its type and a hash of its fields.
func fingerprint(m any) string {
	switch m := m.(type) {
	case *bigRefl:
		return fmt.Sprintf("refl %s %x %v", m.Name, sha256.Sum256(m.Data), sha256.Sum256(fmt.Append(nil, m.More)))
	case bigRefl:
		return "value " + fingerprint(&m)
	case *bigCustom:
		return fmt.Sprintf("custom %x", sha256.Sum256(m.Data))
	case *genmsg.Msg:
		return fmt.Sprintf("gen %d %s %x", m.Seq, m.Name, sha256.Sum256(m.Data))
	case *wrapperspb.BytesValue:
		return fmt.Sprintf("proto %x", sha256.Sum256(m.GetValue()))
	}
	return fmt.Sprintf("%T", m)
}

// requireNoPartials waits until n's receive loop holds no partial
// message.
func requireNoPartials(t *testing.T, n *Node) {
	t.Helper()
	require.Eventually(t, func() bool { return n.chunks.partials.Load() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// A message whose encoding fails, or changes size, after pieces of it
// were sent is an error at the sender and aborted at the receiver, which
// keeps nothing of it; the pair goes on.
func TestLargeAborted(t *testing.T) {
	nodes := startInternal(t, 2)
	got := make(chan *bigCustom, 4)
	_, err := nodes[1].SpawnNamed(PropsFromFunc(func(c Context) {
		if m, ok := c.Message().(*bigCustom); ok {
			got <- m
		}
	}), "sink")
	require.NoError(t, err)
	target := nodes[0].PID(1, "sink")
	err = nodes[0].Tell(target, &bigCustom{Data: make([]byte, 2<<20), FailAt: 1 << 20})
	require.ErrorContains(t, err, "failed on purpose")
	err = nodes[0].Tell(target, &bigCustom{Data: make([]byte, 2<<20), Grow: 100})
	require.ErrorIs(t, err, errChanged)
	want := pattern(2<<20, 3)
	require.NoError(t, nodes[0].Tell(target, &bigCustom{Data: want}))
	select {
	case m := <-got:
		require.Equal(t, want, m.Data)
	case <-time.After(30 * time.Second):
		t.Fatal("the message after the aborted ones never arrived")
	}
	requireNoPartials(t, nodes[1])
}

// Pieces whose payload declares more than the message holds, or that do
// not decode as their type, are refused as they come, without allocating
// what they declare, and reported once; later messages arrive.
func TestLargeUndecodable(t *testing.T) {
	n := startInternal(t, 1)[0]
	evs := undeliverables(t, n)
	e := getEncoder()
	defer putEncoder(e)
	// A prelude for bigRefl, then a map header and a bin32 that declares
	// 4 GiB in a message of 2 MiB.
	e.set(&PID{Id: "x"}, nil, nil, &bigRefl{})
	_, err := e.AppendBody(nil)
	require.NoError(t, err)
	prelude := e.buf[:len(e.buf)-len(mustMsgpack(t, &bigRefl{}))]
	payload := append([]byte{0x83, 0xa4, 'N', 'a', 'm', 'e', 0xa0, 0xa4, 'D', 'a', 't', 'a', 0xc6}, 0xff, 0xff, 0xff, 0xff)
	first := append(bytes.Clone(prelude), payload...)
	total := 2 << 20
	piece := func(id uint64, off int, data []byte) []byte {
		b := []byte{kindUser}
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(total))
		b = binary.AppendUvarint(b, uint64(off))
		return append(b, data...)
	}
	n.recvChunk(0, piece(1, 0, first))
	ev := recvEvent(t, evs)
	require.ErrorIs(t, ev.Err, ErrUndecodable)
	require.ErrorContains(t, ev.Err, "declared")
	// The rest of its pieces are skipped, not reported again.
	n.recvChunk(0, piece(1, len(first), make([]byte, total-len(first))))
	for deadline := time.After(50 * time.Millisecond); ; {
		var ev *UndeliverableEvent
		select {
		case ev = <-evs:
		case <-deadline:
		}
		if ev == nil {
			break
		}
		var remote *RemoteError // this rank's notice to itself, the sender
		require.ErrorAs(t, ev.Err, &remote, "a second report")
	}
	require.Empty(t, n.chunks.bySender[0])
	require.Zero(t, n.chunks.bytes[0])

	// Bytes after the value.
	whole := mustMsgpack(t, &bigRefl{Data: make([]byte, 100)})
	first = append(bytes.Clone(prelude), whole...)
	n.recvChunk(0, piece(2, 0, first))
	n.recvChunk(0, piece(2, len(first), make([]byte, total-len(first))))
	require.ErrorContains(t, recvEvent(t, evs).Err, "after the message")
	require.Empty(t, n.chunks.bySender[0])

	// An abort ends a message in flight silently.
	n.recvChunk(0, piece(3, 0, first[:len(prelude)+10]))
	require.Len(t, n.chunks.bySender[0], 1)
	abort := binary.AppendUvarint([]byte{chunkAbort}, 3)
	n.recvChunk(0, append(abort, 0, 0))
	require.Empty(t, n.chunks.bySender[0])
	require.Zero(t, n.chunks.bytes[0])
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(t, err)
	return b
}

func recvEvent(t *testing.T, c chan *UndeliverableEvent) *UndeliverableEvent {
	t.Helper()
	select {
	case ev := <-c:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no UndeliverableEvent")
	}
	return nil
}

// Past MaxInbound a large message is held at its first piece, which
// stays in the ring until its actor catches up; then every message
// arrives whole and in order.
func TestLargeHeld(t *testing.T) {
	nodes, err := StartLocal(t.Context(), 2, Config{MaxInbound: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	gate := make(chan struct{})
	got := make(chan *bigRefl, 4)
	_, err = nodes[1].SpawnNamed(PropsFromFunc(func(c Context) {
		if m, ok := c.Message().(*bigRefl); ok {
			<-gate
			got <- m
		}
	}), "slow")
	require.NoError(t, err)
	target := nodes[0].PID(1, "slow")
	var sent []*bigRefl
	for i := range 3 {
		sent = append(sent, &bigRefl{Name: fmt.Sprint(i), Data: pattern(2<<20, i+1)})
	}
	tells := make(chan error, 1)
	go func() { // the sender blocks while its pair is held
		for _, m := range sent {
			if err := nodes[0].Tell(target, m); err != nil {
				tells <- err
				return
			}
		}
		tells <- nil
	}()
	// The first is with the actor, the second waits for it (an actor
	// with nothing waiting always gets one more), the third is held.
	require.Eventually(t, func() bool { return nodes[1].Mailbox().Stats().Holds > 0 }, 10*time.Second, 5*time.Millisecond)
	close(gate)
	select {
	case err := <-tells:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the sends never returned")
	}
	for _, want := range sent {
		select {
		case m := <-got:
			require.Equal(t, want.Name, m.Name)
			require.Equal(t, want.Data, m.Data)
		case <-time.After(30 * time.Second):
			t.Fatal("a held message never arrived")
		}
	}
	requireNoPartials(t, nodes[1])
}

// A prelude longer than the first piece (headers of 300 KiB) sends the
// message the other way: put together whole, then decoded.
func TestLargeLongPrelude(t *testing.T) {
	nodes := startInternal(t, 2)
	type got struct {
		m *bigRefl
		h string
	}
	c := make(chan got, 1)
	_, err := nodes[1].SpawnNamed(PropsFromFunc(func(ctx Context) {
		if m, ok := ctx.Message().(*bigRefl); ok {
			c <- got{m, ctx.MessageHeader().Get("long")}
		}
	}), "sink")
	require.NoError(t, err)
	long := string(pattern(300<<10, 13))
	want := &bigRefl{Name: "long", Data: pattern(1<<20, 17)}
	nodes[0].Root().Send(nodes[0].PID(1, "sink"), &MessageEnvelope{Header: map[string]string{"long": long}, Message: want})
	select {
	case g := <-c:
		require.Equal(t, want.Data, g.m.Data)
		require.Equal(t, long, g.h)
	case <-time.After(30 * time.Second):
		t.Fatal("the message with a long prelude never arrived")
	}
	requireNoPartials(t, nodes[1])
}
