package conformance

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testErrors(t *testing.T, f Factory) {
	// gin/doc.go, Errors: "Bad input is an error at the call, never a
	// corrupted peer: peers outside the team (ErrPeerOutOfRange) ..."
	// ncclTeam (nccl_device/core.h, NCCL 2.28): a peer is 0..nRanks-1.
	t.Run("PeerOutOfRange", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		win := e.windows(4096, 0)
		x, c := e.x(0, 0), e.comms[0]
		require.Equal(t, 1, c.Rail().NRanks, "a 2-rank shm job has one rank per rail (LSA = world)")
		cases := []struct {
			name string
			team gin.Team
			peer int
		}{
			{"world -1", c.World(), -1},
			{"world NRanks", c.World(), c.Size()},
			{"world MaxInt", c.World(), math.MaxInt},
			{"rail peer 1 of a 1-rank rail", c.Rail(), 1},
			{"LSA NRanks", c.LSA(), c.LSA().NRanks},
			{"forged team past the world", gin.Team{Rank: 0, NRanks: 5, Stride: 1}, 3},
			{"forged team before the world", gin.Team{Rank: 0, NRanks: 2, Stride: -1}, 1},
		}
		for _, tc := range cases {
			require.ErrorIs(t, x.Put(tc.team, tc.peer, win[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.LocalNone), gin.ErrPeerOutOfRange, "Put, %s", tc.name)
			require.ErrorIs(t, x.PutValue(tc.team, tc.peer, win[0], 0, 1, 8, gin.SignalInc(0)), gin.ErrPeerOutOfRange, "PutValue, %s", tc.name)
			require.ErrorIs(t, x.Signal(tc.team, tc.peer, gin.SignalInc(0)), gin.ErrPeerOutOfRange, "Signal, %s", tc.name)
		}
		e.fence(0, 1, 1)
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Zero(t, v, "signal 0 after rejected posts")
		require.NoError(t, zero(win[1].Bytes()))
	})

	// gin/doc.go, Errors: "Bad input is an error at the call, never a
	// corrupted peer"; gin/errors.go ErrOutOfBounds: "when
	// offset+bytes falls outside a window ... Nothing is written."
	t.Run("OutOfBounds", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 1})
		const size = 4096
		win := e.windows(size, 0)
		big := e.windows(2*size, 0)
		x, w := e.x(0, 0), e.comms[0].World()
		fill(win[0].Bytes(), 1)
		cases := []struct {
			name           string
			dst, src       *gin.Window
			dstOff, srcOff int
			bytes          int
		}{
			{"dst end", win[0], win[0], size - 7, 0, 8},
			{"dst past end", win[0], win[0], size, 0, 1},
			{"dst negative", win[0], win[0], -1, 0, 8},
			{"dst huge", win[0], win[0], math.MaxInt - 3, 0, 8},
			{"dst huge bytes", win[0], win[0], 8, 0, math.MaxInt},
			{"src end", win[0], win[0], 0, size - 1, 2},
			{"src negative", win[0], win[0], 0, -8, 8},
			{"src huge", win[0], win[0], 0, math.MaxInt - 3, 8},
			{"bigger than dst", win[0], big[0], 0, 0, size + 1},
			{"negative bytes", win[0], win[0], 8, 8, -1},
		}
		for _, tc := range cases {
			require.ErrorIs(t, x.Put(w, 1, tc.dst, tc.dstOff, tc.src, tc.srcOff, tc.bytes, gin.SignalInc(0), gin.CounterInc(0)), gin.ErrOutOfBounds, "Put, %s", tc.name)
		}
		for _, off := range []int{size - 7, size, -1, math.MaxInt - 3, math.MinInt} {
			require.ErrorIs(t, x.PutValue(w, 1, win[0], off, 1, 8, gin.SignalInc(0)), gin.ErrOutOfBounds, "PutValue at %d", off)
		}
		require.ErrorIs(t, x.PutValue(w, 1, win[0], size-1, 1, 2, gin.SignalInc(0)), gin.ErrOutOfBounds, "PutValue of 2 bytes at the last byte")
		require.NoError(t, x.PutValue(w, 1, win[0], size-1, 0x7F, 1, gin.None), "PutValue of 1 byte at the last byte")
		e.fence(0, 1, 1)
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Zero(t, v, "signal after rejected puts: nothing may be applied")
		c, err := x.ReadCounter(0, 56)
		require.NoError(t, err)
		require.Zero(t, c, "counter after rejected puts")
		require.NoError(t, zero(win[1].Bytes()[:size-1]), "peer window after rejected puts")
		require.Equal(t, byte(0x7F), win[1].Bytes()[size-1])
		// Exactly at the edges is fine.
		require.NoError(t, x.Put(w, 1, win[0], 0, win[0], 0, size, gin.SignalInc(0), gin.LocalNone))
		require.NoError(t, x.Put(w, 1, win[0], size, win[0], size, 0, gin.SignalInc(0), gin.LocalNone), "a 0-byte put at the end")
		_, err = e.x(1, 0).WaitSignal(e.ctx, 0, 2, 64)
		require.NoError(t, err)
		require.NoError(t, checkFill(win[1].Bytes(), 1))
	})

	// gin/errors.go: "ErrUnknownSignal is returned for a signal index >=
	// Config.Signals"; ErrUnknownCounter likewise.
	t.Run("UnknownSignal", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 3, Counters: 2})
		win := e.windows(4096, 0)
		x, w := e.x(0, 0), e.comms[0].World()
		for _, s := range []gin.Signal{3, 4, math.MaxUint32} {
			require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalInc(s), gin.LocalNone), gin.ErrUnknownSignal, "Put SignalInc(%d)", s)
			require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalAdd(s, 2), gin.LocalNone), gin.ErrUnknownSignal, "Put SignalAdd(%d)", s)
			require.ErrorIs(t, x.PutValue(w, 1, win[0], 0, 1, 8, gin.SignalInc(s)), gin.ErrUnknownSignal, "PutValue(%d)", s)
			require.ErrorIs(t, x.Signal(w, 1, gin.SignalInc(s)), gin.ErrUnknownSignal, "Signal(%d)", s)
			_, err := x.ReadSignal(s, 64)
			require.ErrorIs(t, err, gin.ErrUnknownSignal, "ReadSignal(%d)", s)
			_, err = x.WaitSignal(e.ctx, s, 0, 64)
			require.ErrorIs(t, err, gin.ErrUnknownSignal, "WaitSignal(%d)", s)
			require.ErrorIs(t, x.ResetSignal(s), gin.ErrUnknownSignal, "ResetSignal(%d)", s)
			_, err = x.ReadSignalShadow(s)
			require.ErrorIs(t, err, gin.ErrUnknownSignal, "ReadSignalShadow(%d)", s)
			_, err = x.IncreaseSignalShadow(s, 1)
			require.ErrorIs(t, err, gin.ErrUnknownSignal, "IncreaseSignalShadow(%d)", s)
			_, err = x.WaitSignalMeetShadow(e.ctx, s, 64)
			require.ErrorIs(t, err, gin.ErrUnknownSignal, "WaitSignalMeetShadow(%d)", s)
		}
		require.NoError(t, zero(win[1].Bytes()), "nothing written by rejected puts")
	})

	t.Run("UnknownCounter", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		win := e.windows(4096, 0)
		x, w := e.x(0, 0), e.comms[0].World()
		for _, c := range []gin.Counter{2, 100, math.MaxUint32} {
			require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.CounterInc(c)), gin.ErrUnknownCounter, "Put CounterInc(%d)", c)
			_, err := x.ReadCounter(c, 56)
			require.ErrorIs(t, err, gin.ErrUnknownCounter, "ReadCounter(%d)", c)
			_, err = x.WaitCounter(e.ctx, c, 0, 56)
			require.ErrorIs(t, err, gin.ErrUnknownCounter, "WaitCounter(%d)", c)
			require.ErrorIs(t, x.ResetCounter(c), gin.ErrUnknownCounter, "ResetCounter(%d)", c)
		}
		e.fence(0, 1, 1)
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Zero(t, v, "signal of a put rejected for its counter")
	})

	// gin/doc.go caller duty 2: "Between two resets, a signal is updated
	// only by SignalInc or only by SignalAdd: mixing them returns
	// ErrMixedSignalOps". NCCL gin.h ncclGin_SignalInc: "may not be mixed
	// with other signal-modifying operations without an intervening signal
	// reset".
	t.Run("MixedSignalOps", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		win := e.windows(4096, 0)
		x, w := e.x(0, 0), e.comms[0].World()
		require.NoError(t, x.Signal(w, 1, gin.SignalInc(0)))
		_, err := e.x(1, 0).WaitSignal(e.ctx, 0, 1, 64)
		require.NoError(t, err)
		require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalAdd(0, 5), gin.LocalNone), gin.ErrMixedSignalOps, "Put SignalAdd after SignalInc")
		require.ErrorIs(t, x.Signal(w, 1, gin.SignalAdd(0, 5)), gin.ErrMixedSignalOps, "Signal SignalAdd after SignalInc")
		require.ErrorIs(t, x.PutValue(w, 1, win[0], 0, 9, 8, gin.SignalAdd(0, 5)), gin.ErrMixedSignalOps, "PutValue SignalAdd after SignalInc")
		_ = x.Flush(e.ctx) // may repeat the error (gin/put.go, Flush)
		// Other signals and the connection are unharmed.
		require.NoError(t, x.Signal(w, 1, gin.SignalInc(1)), "SignalInc on another signal, after the mixed ops: faults %v", e.comms[0].Faults())
		_, err = e.x(1, 0).WaitSignal(e.ctx, 1, 1, 64)
		require.NoError(t, err)
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(1), v, "the rejected SignalAdds added nothing")
		// After a reset at the target, SignalAdd is allowed.
		require.NoError(t, e.x(1, 0).ResetSignal(0))
		require.NoError(t, x.Signal(w, 1, gin.SignalAdd(0, 5)), "SignalAdd after ResetSignal")
		v, err = e.x(1, 0).WaitSignal(e.ctx, 0, 5, 64)
		require.NoError(t, err)
		require.Equal(t, uint64(5), v)
		// And now SignalInc is the mix.
		require.ErrorIs(t, x.Signal(w, 1, gin.SignalInc(0)), gin.ErrMixedSignalOps, "SignalInc after SignalAdd")
		_ = x.Flush(e.ctx)
		// The check is per signal and per target: SignalAdd on signal 2 and
		// SignalInc on signal 3, and the same signal on another rank.
		require.NoError(t, x.Signal(w, 1, gin.SignalAdd(2, 7)))
		require.NoError(t, x.Signal(w, 1, gin.SignalInc(3)))
		require.NoError(t, x.Signal(w, 0, gin.SignalInc(0)), "signal 0 of rank 0 is unset")
		_, err = e.x(1, 0).WaitSignal(e.ctx, 3, 1, 64)
		require.NoError(t, err)
	})

	t.Run("BadArgument", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2})
		win := e.windows(4096, 0)
		strict := e.windows(4096, gin.StrictOrdering)
		x, w := e.x(0, 0), e.comms[0].World()

		// gin/action.go, VASignalInc: "w must be registered with
		// StrictOrdering" (NCCL_WIN_COLL_STRICT_ORDERING, NCCL 2.28).
		require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.VASignalInc(win[0], 64), gin.LocalNone), gin.ErrBadArgument, "VASignalInc on a window without StrictOrdering")
		require.ErrorIs(t, x.Signal(w, 1, gin.VASignalAdd(win[0], 64, 2)), gin.ErrBadArgument, "VASignalAdd on a window without StrictOrdering")
		_, err := x.ReadSignalVA(win[0], 64, 64)
		require.ErrorIs(t, err, gin.ErrBadArgument, "ReadSignalVA on a window without StrictOrdering")
		_, err = x.WaitSignalVA(e.ctx, win[0], 64, 0, 64)
		require.ErrorIs(t, err, gin.ErrBadArgument, "WaitSignalVA on a window without StrictOrdering")
		require.ErrorIs(t, x.ResetSignalVA(win[0], 64), gin.ErrBadArgument, "ResetSignalVA on a window without StrictOrdering")
		require.ErrorIs(t, x.Signal(w, 1, gin.VASignalInc(nil, 0)), gin.ErrBadArgument, "VA signal on a nil window")

		// gin/errors.go, ErrOutOfBounds: "(or a window offset is misaligned
		// for a signal word)".
		for _, off := range []int{4, 63, -8, 4096, 4092, math.MaxInt - 7} {
			require.ErrorIs(t, x.Signal(w, 1, gin.VASignalInc(strict[0], off)), gin.ErrOutOfBounds, "VASignalInc at %d", off)
			require.ErrorIs(t, x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.VASignalAdd(strict[0], off, 1), gin.LocalNone), gin.ErrOutOfBounds, "Put VASignalAdd at %d", off)
			_, err := x.ReadSignalVA(strict[0], off, 64)
			require.ErrorIs(t, err, gin.ErrOutOfBounds, "ReadSignalVA at %d", off)
			_, err = x.WaitSignalVA(e.ctx, strict[0], off, 0, 64)
			require.ErrorIs(t, err, gin.ErrOutOfBounds, "WaitSignalVA at %d", off)
			require.ErrorIs(t, x.ResetSignalVA(strict[0], off), gin.ErrOutOfBounds, "ResetSignalVA at %d", off)
		}

		// gin/errors.go, ErrBadArgument: "a PutValue size other than 1, 2, 4
		// or 8, bits outside 1..64".
		for _, size := range []int{0, 3, 5, 7, 16, -1} {
			require.ErrorIs(t, x.PutValue(w, 1, win[0], 0, 1, size, gin.SignalInc(0)), gin.ErrBadArgument, "PutValue size %d", size)
		}
		for _, bits := range []int{0, -1, 65, 128} {
			_, err := x.ReadSignal(0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "ReadSignal bits %d", bits)
			_, err = x.WaitSignal(e.ctx, 0, 0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "WaitSignal bits %d", bits)
			_, err = x.WaitSignalMeetShadow(e.ctx, 0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "WaitSignalMeetShadow bits %d", bits)
			_, err = x.ReadSignalVA(strict[0], 0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "ReadSignalVA bits %d", bits)
			_, err = x.WaitSignalVA(e.ctx, strict[0], 0, 0, bits)
			require.ErrorIs(t, err, gin.ErrBadArgument, "WaitSignalVA bits %d", bits)
		}

		// gin/put.go, Signal: "remote must not be None".
		require.ErrorIs(t, x.Signal(w, 1, gin.None), gin.ErrBadArgument, "Signal with None")
		// Nil windows.
		require.ErrorIs(t, x.Put(w, 1, nil, 0, win[0], 0, 8, gin.None, gin.LocalNone), gin.ErrBadArgument, "Put to a nil window")
		require.ErrorIs(t, x.Put(w, 1, win[0], 0, nil, 0, 8, gin.None, gin.LocalNone), gin.ErrBadArgument, "Put from a nil window")
		require.ErrorIs(t, x.PutValue(w, 1, nil, 0, 1, 8, gin.None), gin.ErrBadArgument, "PutValue to a nil window")
		// gin/window.go, RegisterWindow: a negative size.
		_, err = e.comms[0].RegisterWindow(e.ctx, -1, 0)
		require.ErrorIs(t, err, gin.ErrBadArgument, "RegisterWindow(-1)")

		// Windows belong to their Comm: one of another job is rejected
		// (gin/put.go, own: "window of another comm").
		o := setup(t, f, 2, gin.Config{Signals: 2})
		other := o.windows(4096, gin.StrictOrdering)
		require.ErrorIs(t, x.Put(w, 1, other[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.LocalNone), gin.ErrBadArgument, "Put to another comm's window")
		require.ErrorIs(t, x.Put(w, 1, win[0], 0, other[0], 0, 8, gin.SignalInc(0), gin.LocalNone), gin.ErrBadArgument, "Put from another comm's window")
		require.ErrorIs(t, x.PutValue(w, 1, other[0], 0, 1, 8, gin.SignalInc(0)), gin.ErrBadArgument, "PutValue to another comm's window")
		require.ErrorIs(t, x.Signal(w, 1, gin.VASignalInc(other[0], 64)), gin.ErrBadArgument, "VA signal in another comm's window")
		_, err = x.ReadSignalVA(other[0], 64, 64)
		require.ErrorIs(t, err, gin.ErrBadArgument, "ReadSignalVA of another comm's window")
		_, err = x.WaitSignalVA(e.ctx, other[0], 64, 0, 64)
		require.ErrorIs(t, err, gin.ErrBadArgument, "WaitSignalVA of another comm's window")
		require.ErrorIs(t, x.ResetSignalVA(other[0], 64), gin.ErrBadArgument, "ResetSignalVA of another comm's window")
		e.fence(0, 1, 1)
		require.NoError(t, zero(win[1].Bytes()), "rejected posts wrote nothing")
		require.NoError(t, zero(other[1].Bytes()), "nothing reached the other job")
		v, err := e.x(1, 0).ReadSignal(0, 64)
		require.NoError(t, err)
		require.Zero(t, v, "rejected posts signalled nothing")
	})

	// gin/errors.go: "ErrUnknownContext is returned by Comm.Context for an
	// index outside 0..ContextCount()-1".
	t.Run("UnknownContext", func(t *testing.T) {
		e := setup(t, f, 1, gin.Config{Contexts: 3})
		c := e.comms[0]
		require.Equal(t, 3, c.ContextCount())
		for _, i := range []int{-1, 3, math.MaxInt, math.MinInt} {
			_, err := c.Context(i)
			require.ErrorIs(t, err, gin.ErrUnknownContext, "Context(%d)", i)
		}
		for i := range 3 {
			x, err := c.Context(i)
			require.NoError(t, err)
			require.Equal(t, i, x.Index())
			require.Same(t, c, x.Comm())
		}
	})

	// gin/errors.go: "ErrClosed is returned by every call on a Comm, its
	// windows and contexts after Comm.Close."
	t.Run("Closed", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 2})
		win := e.windows(4096, 0)
		strict := e.windows(4096, gin.StrictOrdering)
		x, c := e.x(0, 0), e.comms[0]
		w := c.World()
		require.NoError(t, c.Close())
		require.NoError(t, c.Close(), "a second Close")
		calls := map[string]error{
			"Put":           x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.LocalNone),
			"PutValue":      x.PutValue(w, 1, win[0], 0, 1, 8, gin.SignalInc(0)),
			"Signal":        x.Signal(w, 1, gin.SignalInc(0)),
			"Flush":         x.Flush(e.ctx),
			"ResetSignal":   x.ResetSignal(0),
			"ResetCounter":  x.ResetCounter(0),
			"ResetSignalVA": x.ResetSignalVA(strict[0], 0),
			"Barrier":       c.Barrier(e.ctx),
			"Put VA signal": x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.VASignalInc(strict[0], 0), gin.LocalNone),
			"Put to self":   x.Put(w, 0, win[0], 0, win[0], 0, 8, gin.None, gin.LocalNone),
		}
		_, calls["ReadSignal"] = x.ReadSignal(0, 64)
		_, calls["WaitSignal"] = x.WaitSignal(e.ctx, 0, 1, 64)
		_, calls["ReadCounter"] = x.ReadCounter(0, 56)
		_, calls["WaitCounter"] = x.WaitCounter(e.ctx, 0, 1, 56)
		_, calls["ReadSignalVA"] = x.ReadSignalVA(strict[0], 0, 64)
		_, calls["WaitSignalVA"] = x.WaitSignalVA(e.ctx, strict[0], 0, 1, 64)
		_, calls["ReadSignalShadow"] = x.ReadSignalShadow(0)
		_, calls["IncreaseSignalShadow"] = x.IncreaseSignalShadow(0, 1)
		_, calls["WaitSignalMeetShadow"] = x.WaitSignalMeetShadow(e.ctx, 0, 64)
		_, calls["RegisterWindow"] = c.RegisterWindow(e.ctx, 4096, 0)
		_, calls["Context"] = c.Context(0)
		var bad []string
		for name, err := range calls {
			if err := is(err, gin.ErrClosed, name); err != nil {
				bad = append(bad, err.Error())
			}
		}
		require.Empty(t, bad, "calls after Close that did not return ErrClosed")
	})

	// gin/window.go, RegisterWindow: "unequal sizes fail on every rank with
	// ErrBadArgument"; gin/doc.go caller duty 1 (equal arguments).
	t.Run("RegisterWindowMismatch", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{})
		for _, tc := range []struct {
			name  string
			size  [2]int
			flags [2]gin.WindowFlags
		}{
			{"sizes", [2]int{4096, 8192}, [2]gin.WindowFlags{0, 0}},
			{"flags", [2]int{4096, 4096}, [2]gin.WindowFlags{0, gin.StrictOrdering}},
		} {
			errs := make([]error, 2)
			e.ranks(func(r int) error {
				_, errs[r] = e.comms[r].RegisterWindow(e.ctx, tc.size[r], tc.flags[r])
				return nil
			})
			for r, err := range errs {
				require.ErrorIs(t, err, gin.ErrBadArgument, "%s differ: rank %d", tc.name, r)
			}
		}
		// The collective sequence is intact: an equal registration works.
		win := e.windows(4096, 0)
		require.NoError(t, e.x(0, 0).Put(e.comms[0].World(), 1, win[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.LocalNone))
		_, err := e.x(1, 0).WaitSignal(e.ctx, 0, 1, 64)
		require.NoError(t, err)
	})

	// gin/config.go Requirements and gin/comm.go NewComm: "It fails with an
	// *rdma.UnsupportedError (ErrNotSupported) when the provider lacks what
	// cfg.Require names".
	t.Run("Require", func(t *testing.T) {
		probe := setup(t, f, 1, gin.Config{})
		caps := probe.comms[0].Capabilities()
		comms, err := newLocal(t, f, 2, gin.Config{Require: gin.Requirements{MaxPutSize: 1 << 40}})
		require.ErrorIs(t, err, gin.ErrNotSupported, "Require.MaxPutSize 1<<40")
		require.Nil(t, comms)
		comms, err = newLocal(t, f, 2, gin.Config{Require: gin.Requirements{MaxPutSize: caps.MaxPutSize + 1}})
		require.ErrorIs(t, err, gin.ErrNotSupported, "Require.MaxPutSize one past the capability")
		require.Nil(t, comms)
		_, err = newLocal(t, f, 2, gin.Config{Signals: caps.MaxSignals + 1})
		require.ErrorIs(t, err, gin.ErrNotSupported, "more signals than the provider has")
		// What the provider has passes.
		req := gin.Requirements{StrongSignals: caps.StrongSignals, SignalAdd: caps.SignalAdd, VASignals: caps.VASignals, MaxPutSize: caps.MaxPutSize}
		e := setup(t, f, 2, gin.Config{Require: req})
		require.Len(t, e.comms, 2)
		if !caps.StrongSignals {
			_, err := newLocal(t, f, 2, gin.Config{Require: gin.Requirements{StrongSignals: true}})
			require.ErrorIs(t, err, gin.ErrNotSupported, "Require.StrongSignals on a weak-signal provider")
		}
		if !caps.SignalAdd {
			_, err := newLocal(t, f, 2, gin.Config{Require: gin.Requirements{SignalAdd: true}})
			require.ErrorIs(t, err, gin.ErrNotSupported, "Require.SignalAdd on a provider without it")
		}
		if !caps.VASignals {
			_, err := newLocal(t, f, 2, gin.Config{Require: gin.Requirements{VASignals: true}})
			require.ErrorIs(t, err, gin.ErrNotSupported, "Require.VASignals on a provider without them")
		}
	})

	// gin/errors.go, ErrBadArgument: "malformed arguments not covered
	// above"; gin/config.go: SQDepth is "a power of two", counts are not
	// negative, at most 4096 contexts.
	t.Run("Config", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			cfg  gin.Config
		}{
			{"negative Signals", gin.Config{Signals: -1}},
			{"negative Counters", gin.Config{Counters: -1}},
			{"negative Contexts", gin.Config{Contexts: -1}},
			{"negative QPsPerPeer", gin.Config{QPsPerPeer: -1}},
			{"negative SQDepth", gin.Config{SQDepth: -8}},
			{"negative LSASize", gin.Config{LSASize: -1}},
			{"4097 contexts", gin.Config{Contexts: 4097}},
			{"SQDepth 3", gin.Config{SQDepth: 3}},
			{"SQDepth 12", gin.Config{SQDepth: 12}},
		} {
			comms, err := newLocal(t, f, 2, tc.cfg)
			require.ErrorIs(t, err, gin.ErrBadArgument, tc.name)
			require.Nil(t, comms, tc.name)
		}
		_, err := gin.NewLocal(context.Background(), 0, gin.Config{})
		require.ErrorIs(t, err, gin.ErrBadArgument, "NewLocal with 0 ranks")
	})

	// gin/doc.go, Errors: "Once the bootstrap reports a lost rank, every
	// wait and post of the Comm ends with ErrPeerLost." A rank that closes
	// and misses a collective is lost to the others.
	t.Run("PeerLost", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, Counters: 1})
		win := e.windows(4096, 0)
		x, c := e.x(0, 0), e.comms[0]
		waiting := make(chan error, 1)
		go func() {
			_, err := x.WaitSignal(e.ctx, 0, 1, 64)
			waiting <- err
		}()
		require.NoError(t, e.comms[1].Close())
		require.ErrorIs(t, c.Barrier(e.ctx), gin.ErrPeerLost, "a collective the closed rank misses")
		if err := c.Err(); !errors.Is(err, gin.ErrPeerLost) {
			// The Comm's own collective reported the loss: the Comm knows.
			t.Errorf("Comm.Err right after Barrier returned ErrPeerLost: %v, want ErrPeerLost", err)
			for c.Err() == nil && e.ctx.Err() == nil { // go on with the rest
				time.Sleep(100 * time.Microsecond)
			}
		}
		select {
		case err := <-waiting:
			require.ErrorIs(t, err, gin.ErrPeerLost, "a wait in progress")
		case <-time.After(5 * time.Second):
			t.Fatal("a wait in progress goes on 5 s after the peer was lost")
		}
		w := c.World()
		calls := map[string]error{
			"Put":            x.Put(w, 1, win[0], 0, win[0], 0, 8, gin.SignalInc(0), gin.LocalNone),
			"Put to self":    x.Put(w, 0, win[0], 0, win[0], 8, 8, gin.None, gin.CounterInc(0)),
			"PutValue":       x.PutValue(w, 1, win[0], 0, 1, 8, gin.SignalInc(0)),
			"Signal":         x.Signal(w, 1, gin.SignalInc(0)),
			"Signal to self": x.Signal(w, 0, gin.SignalInc(0)),
			"Flush":          x.Flush(e.ctx),
		}
		_, calls["WaitSignal"] = x.WaitSignal(e.ctx, 0, 1, 64)
		_, calls["WaitCounter"] = x.WaitCounter(e.ctx, 0, 1, 56)
		_, calls["WaitSignalMeetShadow"] = x.WaitSignalMeetShadow(e.ctx, 0, 64)
		var bad []string
		for name, err := range calls {
			if err := is(err, gin.ErrPeerLost, name); err != nil {
				bad = append(bad, err.Error())
			}
		}
		require.Empty(t, bad, "calls after a peer was lost that did not return ErrPeerLost")
	})
}
