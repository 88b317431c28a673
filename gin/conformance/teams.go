package conformance

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/stretchr/testify/require"
)

func testTeams(t *testing.T, f Factory) {
	// gin/comm.go: World, LSA ("ranks whose memory this rank can load and
	// store"), Rail ("NRanks = Size/LSASize, Rank = Rank/LSASize, Stride =
	// LSASize"); a peer is a rank within a team. gin/team.go: "member p of
	// the team is world rank base + p*Stride" (ncclTeam, nccl_device/core.h).
	t.Run("LSASize2", func(t *testing.T) {
		e := setup(t, f, 4, gin.Config{Signals: 4, LSASize: 2})
		win := e.windows(64, 0)
		for r, c := range e.comms {
			require.Equal(t, r, c.Rank())
			require.Equal(t, 4, c.Size())
			require.Equal(t, gin.Team{Rank: r, NRanks: 4, Stride: 1}, c.World(), "rank %d World", r)
			require.Equal(t, gin.Team{Rank: r % 2, NRanks: 2, Stride: 1}, c.LSA(), "rank %d LSA", r)
			require.Equal(t, gin.Team{Rank: r / 2, NRanks: 2, Stride: 2}, c.Rail(), "rank %d Rail", r)
		}
		// Every rank puts its rank to its rail peer (lands at rank±2, signal
		// 0), to its LSA peer (rank±1, signal 1) and to world peer 3-rank
		// (signal 2), each at offset 8*(team)+... of a slot named by sender.
		e.ranks(func(r int) error {
			c, x := e.comms[r], e.x(r, 0)
			puts := []struct {
				team gin.Team
				peer int
				sig  gin.Signal
			}{
				{c.Rail(), 1 - c.Rail().Rank, 0},
				{c.LSA(), 1 - c.LSA().Rank, 1},
				{c.World(), 3 - r, 2},
			}
			for _, p := range puts {
				if err := x.PutValue(p.team, p.peer, win[r], 8*(2*int(p.sig)+r%2), uint64(100*int(p.sig)+r+1), 8, gin.SignalInc(p.sig)); err != nil {
					return fmt.Errorf("put to %+v peer %d: %w", p.team, p.peer, err)
				}
			}
			for s := range gin.Signal(3) {
				if _, err := x.WaitSignal(e.ctx, s, 1, 64); err != nil {
					return err
				}
			}
			from := map[gin.Signal]int{0: r ^ 2, 1: r ^ 1, 2: 3 - r}
			for s, src := range from {
				off := 8 * (2*int(s) + src%2)
				if got, want := binary.LittleEndian.Uint64(win[r].Bytes()[off:]), uint64(100*int(s)+src+1); got != want {
					return fmt.Errorf("signal %d: slot from rank %d holds %d, want %d", s, src, got, want)
				}
			}
			v, err := x.ReadSignal(3, 64)
			if err == nil && v != 0 {
				err = fmt.Errorf("signal 3 is %d", v)
			}
			return err
		})
	})

	// gin/config.go, LSASize: "It must divide the world size."
	t.Run("LSASizeMustDivide", func(t *testing.T) {
		_, err := newLocal(t, f, 4, gin.Config{LSASize: 3})
		require.ErrorIs(t, err, gin.ErrBadArgument, "LSASize 3 with 4 ranks")
		_, err = newLocal(t, f, 4, gin.Config{LSASize: 8})
		require.ErrorIs(t, err, gin.ErrBadArgument, "LSASize 8 with 4 ranks")
	})

	// gin/config.go, LSASize: "default: the ranks of one host on a
	// load/store provider (shm, auto), 1 otherwise" (NCCL's LSA team).
	t.Run("DefaultLSA", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{})
		for r, c := range e.comms {
			lsa := 1
			if c.Capabilities().LoadStore {
				lsa = c.LocalRanks()
			}
			require.Equal(t, gin.Team{Rank: r % lsa, NRanks: lsa, Stride: 1}, c.LSA(), "rank %d LSA", r)
			require.Equal(t, gin.Team{Rank: r / lsa, NRanks: 2 / lsa, Stride: lsa}, c.Rail(), "rank %d Rail", r)
		}
	})
}

func testContexts(t *testing.T, f Factory) {
	// gin/put.go: "Context is an ordering domain of a Comm with its own
	// connections"; gin/config.go QPsPerPeer: "how many QPs per peer the
	// contexts share (N:m)" (as in the N:m QP-sharing change to AMD's ANP
	// NCCL plugin). Each context keeps its own ordering promise while 4
	// contexts share 2 QPs.
	e := setup(t, f, 2, gin.Config{Signals: 8, Contexts: 4, QPsPerPeer: 2})
	require.Equal(t, 4, e.comms[0].ContextCount())
	n := scale(200, 40)
	const size = 1000
	stride := n * size
	src, dst := e.windows(4*stride, 0), e.windows(4*stride, 0)
	for c := range 4 {
		for k := range n {
			fill(src[0].Bytes()[c*stride+k*size:c*stride+(k+1)*size], uint64(c<<20|k))
		}
	}
	parallel(t, 8, "goroutine", func(i int) error {
		c := i % 4
		if i < 4 { // rank 0, context c: puts with signal c, then a Signal on 4+c
			x := e.x(0, c)
			for k := range n {
				off := c*stride + k*size
				remote := gin.SignalInc(gin.Signal(c))
				if k%4 == 3 {
					remote = gin.None
				}
				if err := x.Put(e.comms[0].World(), 1, dst[0], off, src[0], off, size, remote, gin.LocalNone); err != nil {
					return err
				}
			}
			if err := x.Signal(e.comms[0].World(), 1, gin.SignalInc(gin.Signal(4+c))); err != nil {
				return err
			}
			return x.Flush(e.ctx)
		}
		x := e.x(1, c)
		signalled := n - n/4
		checked := 0 // puts [0, checked) were seen
		for seen := 0; seen < signalled; {
			v, err := x.WaitSignal(e.ctx, gin.Signal(c), uint64(seen+1), 64)
			if err != nil {
				return err
			}
			// Signal value v implies the first v signalled puts and every
			// unsignalled put before them: puts [0, limit).
			limit := 0
			for k, idx := 0, 0; k < n && idx < int(v); k++ {
				if k%4 != 3 {
					idx++
					limit = k + 1
				}
			}
			for ; checked < limit; checked++ {
				off := c*stride + checked*size
				if err := checkFill(dst[1].Bytes()[off:off+size], uint64(c<<20|checked)); err != nil {
					return fmt.Errorf("context %d, signal %d: put %d: %w", c, v, checked, err)
				}
			}
			seen = int(v)
		}
		if _, err := x.WaitSignal(e.ctx, gin.Signal(4+c), 1, 64); err != nil {
			return err
		}
		for k := range n {
			off := c*stride + k*size
			if err := checkFill(dst[1].Bytes()[off:off+size], uint64(c<<20|k)); err != nil {
				return fmt.Errorf("context %d after its Signal: put %d: %w", c, k, err)
			}
		}
		return nil
	})
}

func testLoopback(t *testing.T, f Factory) {
	// gin/put.go, Put: "peer is a rank of team; it may be this rank."
	// rdma.Provider.Connect: "peer (which may be this rank: loopback)".
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			e := setup(t, f, n, gin.Config{Signals: 2, Counters: 1})
			const size = 1 << 16
			win := e.windows(2*size, 0)
			me := n - 1
			x, c := e.x(me, 0), e.comms[me]
			fill(win[me].Bytes()[:size], 7)
			require.NoError(t, x.Put(c.World(), me, win[me], size+3, win[me], 0, size-3, gin.SignalInc(0), gin.CounterInc(0)))
			_, err := x.WaitSignal(e.ctx, 0, 1, 64)
			require.NoError(t, err)
			require.NoError(t, checkFill(win[me].Bytes()[size+3:2*size], 7))
			require.NoError(t, x.PutValue(c.LSA(), c.LSA().Rank, win[me], 8, 0xBEEF, 2, gin.SignalInc(0)))
			_, err = x.WaitSignal(e.ctx, 0, 2, 64)
			require.NoError(t, err)
			require.Equal(t, uint16(0xBEEF), binary.LittleEndian.Uint16(win[me].Bytes()[8:]))
			require.NoError(t, x.Signal(c.Rail(), c.Rail().Rank, gin.SignalAdd(1, 40)))
			v, err := x.WaitSignal(e.ctx, 1, 40, 64)
			require.NoError(t, err)
			require.Equal(t, uint64(40), v)
			require.NoError(t, x.Flush(e.ctx))
			v, err = x.ReadCounter(0, 56)
			require.NoError(t, err)
			require.Equal(t, uint64(1), v)
		})
	}
}
