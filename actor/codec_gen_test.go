package actor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/actor/internal/genmsg"
)

func init() { actor.RegisterMessage[genmsg.Msg]() }

// A type with tinylib/msgp's generated methods crosses ranks through them,
// as *T and as T, with its fields intact.
func TestGeneratedCodec(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := startLocal(t, 2, actor.Config{})
	got := make(chan any, 2)
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *genmsg.Msg, genmsg.Msg:
			got <- m
		}
	}), "sink")
	require.NoError(t, err)
	target := nodes[0].PID(1, "sink")
	want := genmsg.Msg{Seq: 42, Data: []byte("generated"), Name: "msgp"}
	nodes[0].Root().Send(target, &want)
	nodes[0].Root().Send(target, want)
	for i, form := range []string{"*T", "T"} {
		select {
		case m := <-got:
			if i == 0 {
				require.Equal(t, &want, m, form)
			} else {
				require.Equal(t, want, m, form)
			}
		case <-ctx.Done():
			t.Fatalf("%s never arrived", form)
		}
	}
}
