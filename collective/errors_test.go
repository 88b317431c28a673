package collective_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad arguments are errors at the call, before anything is sent: the Comm
// stays usable (checked by a good call afterwards on every rank).
func TestArgumentErrors(t *testing.T) {
	const n = 2
	j := newJob(t, n, collective.Config{})
	wins := j.windows(4096)
	c, w := j.colls[0], wins[0]
	at := func(off int) collective.Buffer { return collective.At(w, off) }
	f32 := collective.Float32
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"negative count", func() error { return c.AllReduce(j.ctx, at(0), at(0), -1, f32, collective.Sum) }, collective.ErrBadArgument},
		{"nil window", func() error { return c.AllReduce(j.ctx, collective.Buffer{}, at(0), 1, f32, collective.Sum) }, collective.ErrBadArgument},
		{"misaligned", func() error { return c.AllReduce(j.ctx, at(2), at(0), 1, f32, collective.Sum) }, collective.ErrBadArgument},
		{"out of bounds", func() error { return c.AllReduce(j.ctx, at(4096), at(0), 1, f32, collective.Sum) }, gin.ErrOutOfBounds},
		{"huge count", func() error { return c.AllReduce(j.ctx, at(0), at(0), 1<<60, f32, collective.Sum) }, gin.ErrOutOfBounds},
		{"negative offset", func() error { return c.AllGather(j.ctx, at(-8), at(0), 1, f32) }, collective.ErrBadArgument},
		{"bf16 reduction", func() error {
			return c.AllReduce(j.ctx, at(8), at(0), 1, collective.Bfloat16, collective.Sum)
		}, collective.ErrNotSupported},
		{"unknown type", func() error { return c.AllGather(j.ctx, at(8), at(0), 1, collective.DataType(99)) }, collective.ErrBadArgument},
		{"unknown op", func() error { return c.ReduceScatter(j.ctx, at(0), at(0), 1, f32, collective.Op(9)) }, collective.ErrBadArgument},
		{"root out of range", func() error { return c.Broadcast(j.ctx, at(0), at(0), 1, f32, n) }, collective.ErrBadArgument},
		{"all-to-all in place", func() error { return c.AllToAll(j.ctx, at(0), at(4), 1, f32) }, collective.ErrBadArgument},
		{"all-gather overlap", func() error { return c.AllGather(j.ctx, at(0), at(4), 1, f32) }, collective.ErrBadArgument},
		{"all-to-all-v counts", func() error {
			return c.AllToAllV(j.ctx, at(64), 8, at(0), []int{1}, make([]int, n), f32)
		}, collective.ErrBadArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.call(), tt.want)
		})
	}
	j.ranks(func(r int) error {
		return j.colls[r].AllReduce(j.ctx, collective.At(wins[r], 64), collective.At(wins[r], 0), 4, f32, collective.Sum)
	})
}

// AllToAllV fails on every rank alike when one rank's arguments are bad
// or a receiver's room is too small, and the Comm stays usable.
func TestAllToAllVCollectiveErrors(t *testing.T) {
	const n = 3
	j := newJob(t, n, collective.Config{})
	wins := j.windows(4096)
	j.ranks(func(r int) error {
		c, w := j.colls[r], wins[r]
		send, recv := []int{2, 2, 2}, make([]int, n)
		// Rank 1 passes a negative count.
		if r == 1 {
			send[0] = -1
		}
		err := c.AllToAllV(j.ctx, collective.At(w, 1024), 100, collective.At(w, 0), send, recv, collective.Int32)
		if !errors.Is(err, collective.ErrBadArgument) {
			return fmt.Errorf("negative count at rank 1: %v, want ErrBadArgument", err)
		}
		// Rank 2 has room for 5 elements, gets 6.
		send[0] = 2
		room := 100
		if r == 2 {
			room = 5
		}
		err = c.AllToAllV(j.ctx, collective.At(w, 1024), room, collective.At(w, 0), send, recv, collective.Int32)
		if !errors.Is(err, collective.ErrBadArgument) {
			return fmt.Errorf("overflow at rank 2: %v, want ErrBadArgument", err)
		}
		if recv[0] != 2 || recv[1] != 2 || recv[2] != 2 {
			return fmt.Errorf("receive counts %v", recv)
		}
		return c.AllToAllV(j.ctx, collective.At(w, 1024), 100, collective.At(w, 0), send, recv, collective.Int32)
	})
}

// A rank that never calls makes the others' collective end with the
// context's error, not hang; the Comm is broken afterwards.
func TestTimeout(t *testing.T) {
	const n, absent = 3, 2
	for _, alg := range []string{"oneshot", "ring", "direct"} {
		t.Run(alg, func(t *testing.T) {
			j := newJob(t, n, collective.Config{})
			wins := j.windows(1 << 20)
			j.ranks(func(r int) error {
				if r == absent {
					return nil
				}
				ctx, cancel := context.WithTimeout(j.ctx, 300*time.Millisecond)
				defer cancel()
				w, c := wins[r], j.colls[r]
				var err error
				switch alg {
				case "oneshot":
					err = c.AllReduce(ctx, collective.At(w, 64), collective.At(w, 0), 4, collective.Int32, collective.Sum)
				case "ring":
					err = c.AllReduce(ctx, collective.At(w, 512<<10), collective.At(w, 0), 128<<10, collective.Int32, collective.Sum)
				case "direct":
					err = c.AllToAll(ctx, collective.At(w, 512<<10), collective.At(w, 0), 128<<10/n, collective.Int32)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("with rank %d absent: %v, want DeadlineExceeded", absent, err)
				}
				if err := c.AllReduce(j.ctx, collective.At(w, 64), collective.At(w, 0), 4, collective.Int32, collective.Sum); !errors.Is(err, collective.ErrBroken) {
					return fmt.Errorf("call after a failure: %v, want ErrBroken", err)
				}
				return nil
			})
		})
	}
}

func TestNewErrors(t *testing.T) {
	ctx := context.Background()
	comms, err := gin.NewLocal(ctx, 1, gin.Config{Signals: 2})
	require.NoError(t, err)
	defer comms[0].Close()
	_, err = collective.New(ctx, comms[0], collective.Config{Signal0: 2})
	assert.ErrorIs(t, err, gin.ErrUnknownSignal)
	_, err = collective.New(ctx, nil, collective.Config{})
	assert.ErrorIs(t, err, collective.ErrBadArgument)
	_, err = collective.New(ctx, comms[0], collective.Config{Scratch: -1})
	assert.ErrorIs(t, err, collective.ErrBadArgument)
	_, err = collective.New(ctx, comms[0], collective.Config{Context: 3})
	assert.ErrorIs(t, err, gin.ErrUnknownContext)
	c, err := collective.New(ctx, comms[0], collective.Config{Signal0: 1})
	require.NoError(t, err)
	assert.Equal(t, 0, c.Rank())
	assert.Equal(t, 1, c.Size())
	assert.Equal(t, collective.Local, c.Algorithm(collective.AllReduceOp, 1<<20, collective.Float32))
}

// Close deregisters the scratch window on every rank; later calls fail.
func TestClose(t *testing.T) {
	j := newJob(t, 2, collective.Config{})
	wins := j.windows(64)
	j.ranks(func(r int) error {
		c, w := j.colls[r], wins[r]
		if err := c.Close(j.ctx); err != nil {
			return err
		}
		if err := c.AllReduce(j.ctx, collective.At(w, 8), collective.At(w, 0), 1, collective.Int64, collective.Sum); !errors.Is(err, collective.ErrBroken) {
			return fmt.Errorf("call after Close: %v, want ErrBroken", err)
		}
		return nil
	})
}
