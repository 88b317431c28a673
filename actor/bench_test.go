package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/actor/internal/genmsg"
)

type benchMsg struct {
	Seq  uint64
	Data []byte
}

// benchCodec is benchMsg with hand-written msgpack methods.
type benchCodec struct {
	Seq  uint64
	Data []byte
}

func (m *benchCodec) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeUint(m.Seq); err != nil {
		return err
	}
	return e.EncodeBytes(m.Data)
}

func (m *benchCodec) DecodeMsgpack(d *msgpack.Decoder) (err error) {
	if m.Seq, err = d.DecodeUint64(); err != nil {
		return err
	}
	m.Data, err = d.DecodeBytes()
	return err
}

func init() {
	actor.RegisterMessage[benchMsg]()
	actor.RegisterMessage[benchCodec]()
}

// Round trips between an actor on rank 0 (Context.Request) and one on
// rank 1 (Context.Respond), ranks as goroutines of this process.
func BenchmarkRoundTrip(b *testing.B) {
	nodes, err := actor.StartLocal(context.Background(), 2, actor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	if _, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*benchMsg); ok {
			c.Respond(c.Message())
		}
	}), "pong"); err != nil {
		b.Fatal(err)
	}
	target := nodes[0].PID(1, "pong")
	done := make(chan struct{})
	left := 0
	msg := &benchMsg{Data: make([]byte, 16)}
	ping := nodes[0].Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case int:
			left = c.Message().(int)
			c.Request(target, msg)
		case *benchMsg:
			if left--; left == 0 {
				close(done)
				return
			}
			c.Request(target, msg)
		}
	}))
	b.ReportAllocs()
	b.ResetTimer()
	nodes[0].Root().Send(ping, b.N)
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatal("timeout")
	}
}

// One-way messages from a goroutine on rank 0 (Root().Send) to a counting
// actor on rank 1, with msgpack by reflection, with hand-written methods
// and with tinylib/msgp's generated ones.
func BenchmarkOneWay(b *testing.B) {
	b.Run("codec=reflect", func(b *testing.B) { oneWay(b, &benchMsg{Data: make([]byte, 16)}) })
	b.Run("codec=custom", func(b *testing.B) { oneWay(b, &benchCodec{Data: make([]byte, 16)}) })
	b.Run("codec=generated", func(b *testing.B) { oneWay(b, &genmsg.Msg{Data: make([]byte, 16)}) })

}

func oneWay(b *testing.B, msg any) {
	nodes, err := actor.StartLocal(context.Background(), 2, actor.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	done := make(chan struct{})
	count := 0
	want := b.N
	if _, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch c.Message().(type) {
		case *benchMsg, *benchCodec, *genmsg.Msg:
			if count++; count == want {
				close(done)
			}
		}
	}), "sink"); err != nil {
		b.Fatal(err)
	}
	target := nodes[0].PID(1, "sink")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		nodes[0].Root().Send(target, msg)
	}
	select {
	case <-done:
	case <-time.After(time.Minute):
		b.Fatal("timeout")
	}
}
