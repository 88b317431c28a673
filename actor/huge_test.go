package actor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/actor"
)

// A 256 MiB message crosses the default 1 MiB rings in pieces and arrives
// whole; 2 GiB over MaxMessage is refused at once, before anything of it
// is encoded.
func TestHugeMessage(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("moves 256 MiB several times; skipped with -short and -race")
	}
	nodes := startLocal(t, 2, actor.Config{MaxMessage: 512 << 20})
	got := make(chan *blob, 1)
	_, err := nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if b, ok := c.Message().(*blob); ok {
			got <- b
		}
	}), "sink")
	require.NoError(t, err)
	target := nodes[0].PID(1, "sink")

	huge := &blob{Data: make([]byte, 2<<30)} // address space only: never touched
	start := time.Now()
	err = nodes[0].Tell(target, huge)
	took := time.Since(start)
	require.ErrorIs(t, err, actor.ErrMessageTooLarge)
	require.Less(t, took, 10*time.Millisecond, "the size was found late")
	huge = nil

	want := &blob{Data: make([]byte, 256<<20)}
	for i := 0; i < len(want.Data); i += 4096 {
		want.Data[i] = byte(i >> 12)
	}
	start = time.Now()
	require.NoError(t, nodes[0].Tell(target, want))
	select {
	case b := <-got:
		require.Equal(t, len(want.Data), len(b.Data))
		require.Equal(t, want.Data, b.Data)
		t.Logf("256 MiB in %v", time.Since(start))
	case <-time.After(2 * time.Minute):
		t.Fatal("the 256 MiB message never arrived")
	}
}
