//go:build ofi && cgo && linux

package ofi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// pair is two in-process ranks of one provider, each with a region the
// other imported (and itself: loopback).
type pair struct {
	p   [2]rdma.Provider
	reg [2]rdma.MemoryRegion
	imp [2][2]rdma.RemoteRegion // imp[i][j]: rank i's import of rank j's region
}

func newPair(t testing.TB, prov string, size int) *pair {
	t.Helper()
	t.Setenv(ofi.EnvProvider, prov)
	pr := &pair{}
	for i := range 2 {
		p, err := rdma.Open(ofi.Name, rdma.Config{Rank: i, Size: 2, Job: "pair"})
		if err != nil {
			skipIfNoProvider(t, prov)
			require.NoError(t, err)
		}
		pr.p[i] = p
		t.Cleanup(func() { p.Close() })
		pr.reg[i], err = p.RegisterMemory(size, 0)
		require.NoError(t, err)
	}
	for i := range 2 {
		for j := range 2 {
			var err error
			pr.imp[i][j], err = pr.p[i].Import(j, pr.reg[j].Descriptor())
			require.NoError(t, err)
		}
	}
	return pr
}

// qp connects rank i to j with a handler that sends completions to a channel.
func (pr *pair) qp(t testing.TB, i, j int) (rdma.QP, chan error) {
	ch := make(chan error, 1024)
	q, err := pr.p[i].Connect(j, func(_ uint64, err error) { ch <- err })
	require.NoError(t, err)
	return q, ch
}

// drain calls Progress until n completions arrived or the deadline.
func drain(t testing.TB, q rdma.QP, ch chan error, n int) []error {
	t.Helper()
	var errs []error
	deadline := time.Now().Add(10 * time.Second)
	for len(errs) < n {
		q.Progress()
		select {
		case err := <-ch:
			errs = append(errs, err)
		default:
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d completions after 10s", len(errs), n)
			}
			time.Sleep(10 * time.Microsecond)
		}
	}
	return errs
}

func waitWord(t testing.TB, b []byte, off int, want uint64) {
	t.Helper()
	w := memword.Uint64(b, off)
	deadline := time.Now().Add(10 * time.Second)
	for w.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("word at %d is %d, want %d", off, w.Load(), want)
		}
		time.Sleep(10 * time.Microsecond)
	}
}

func TestPutSignal(t *testing.T) {
	for _, prov := range []string{"tcp", "sockets"} {
		t.Run(prov, func(t *testing.T) {
			pr := newPair(t, prov, 1<<20)
			q, ch := pr.qp(t, 0, 1)
			src := pr.reg[0].Bytes()
			for i := range 4096 {
				src[i] = byte(i * 7)
			}
			sig := rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp[0][1], Off: 0, ModeOff: 8}
			wqes := []rdma.WQE{
				{WrID: 1, Op: rdma.OpWrite, Local: pr.reg[0], LocalOff: 0, Remote: pr.imp[0][1], RemoteOff: 4096, Len: 4096, Signal: sig},
				{WrID: 2, Op: rdma.OpWrite, Local: pr.reg[0], LocalOff: 0, Remote: pr.imp[0][1], RemoteOff: 8192, Len: 8, Signal: sig},
				{WrID: 3, Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalVA, Region: pr.imp[0][1], Off: 64, Value: 1 << 40, ModeOff: -1}},
			}
			require.NoError(t, q.Post(wqes))
			require.Equal(t, []error{nil, nil, nil}, drain(t, q, ch, 3))
			waitWord(t, pr.reg[1].Bytes(), 0, 2)
			waitWord(t, pr.reg[1].Bytes(), 64, 1<<40)
			require.Equal(t, src[:4096], pr.reg[1].Bytes()[4096:8192])
			require.Equal(t, src[:8], pr.reg[1].Bytes()[8192:8200])
		})
	}
}

// TestPostWork: Post counts each WQE's length and a fixed weight toward
// its producer's next yield (schedPost).
func TestPostWork(t *testing.T) {
	pr := newPair(t, "tcp", 1<<16)
	q, ch := pr.qp(t, 0, 1)
	w := rdma.WQE{Op: rdma.OpWrite, Local: pr.reg[0], Remote: pr.imp[0][1], Len: 1 << 15}
	require.NoError(t, q.Post([]rdma.WQE{w, w}))
	require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpNop}}))
	require.Equal(t, []error{nil, nil, nil}, drain(t, q, ch, 3))
	require.Equal(t, 2<<15+3*ofi.SchedOpWork, ofi.PostWork(q))
}

// TestPostValidation: a WQE that fails validation writes nothing, gets no
// completion, and leaves the QP usable (rdma.QP.Post). Ranges and words
// are validated by a checking QP (rdma.CheckQP, as gin validates them
// before it builds a WQE); the provider itself rejects what needs its
// state.
func TestPostValidation(t *testing.T) {
	pr := newPair(t, "tcp", 4096)
	q, ch := pr.qp(t, 0, 1)
	imp, reg := pr.imp[0][1], pr.reg[0]
	sig := rdma.Signal{Mode: rdma.SignalInc, Region: imp, Off: 0, ModeOff: 8}
	cases := []struct {
		name     string
		w        rdma.WQE
		want     error
		provider bool // the bare QP rejects it too
	}{
		{"remote past end", rdma.WQE{Op: rdma.OpWrite, Local: reg, Remote: imp, RemoteOff: 4090, Len: 8}, rdma.ErrOutOfBounds, false},
		{"local negative", rdma.WQE{Op: rdma.OpWrite, Local: reg, LocalOff: -1, Remote: imp, Len: 8}, rdma.ErrOutOfBounds, false},
		{"signal misaligned", rdma.WQE{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalInc, Region: imp, Off: 4, ModeOff: 8}}, rdma.ErrOutOfBounds, false},
		{"mode word is the signal", rdma.WQE{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalAdd, Region: imp, Off: 8, ModeOff: 8, Value: 2}}, rdma.ErrOutOfBounds, false},
		{"opcode", rdma.WQE{Op: 99}, rdma.ErrNotSupported, true},
		{"signal mode", rdma.WQE{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: 9, Region: imp}}, rdma.ErrNotSupported, true},
	}
	posted := 0
	for _, tc := range cases {
		qps := []rdma.QP{rdma.CheckQP(q, 1<<30)}
		if tc.provider {
			qps = append(qps, q)
		}
		for _, qp := range qps {
			err := qp.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: reg, Remote: imp, RemoteOff: 64, Len: 8}, tc.w})
			posted++
			var we *rdma.WQEError
			require.ErrorAs(t, err, &we, tc.name)
			require.Equal(t, 1, we.Index, tc.name)
			require.ErrorIs(t, err, tc.want, tc.name)
		}
	}
	// A region of another rank on this QP, and an import of the wrong peer.
	err := q.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: reg, Remote: pr.imp[0][0], Len: 8}})
	require.ErrorContains(t, err, "on a qp to rank 1")
	// The QP still works, and only the accepted WQEs completed.
	require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpSignal, Signal: sig}}))
	require.Len(t, drain(t, q, ch, posted+1), posted+1)
	waitWord(t, pr.reg[1].Bytes(), 0, 1)

	// Mixed signal ops are refused at the initiator, synchronously.
	err = q.Post([]rdma.WQE{{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalAdd, Region: imp, Off: 0, ModeOff: 8, Value: 3}}})
	require.ErrorIs(t, err, rdma.ErrMixedSignalOps)
	// After a reset at the target (it stores 0 in both words), the next
	// mode is free again: the initiator asks the target.
	memword.Uint64(pr.reg[1].Bytes(), 0).Store(0)
	memword.Uint64(pr.reg[1].Bytes(), 8).Store(0)
	require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalAdd, Region: imp, Off: 0, ModeOff: 8, Value: 3}}}))
	require.Equal(t, []error{nil}, drain(t, q, ch, 1))
	waitWord(t, pr.reg[1].Bytes(), 0, 3)
	require.Zero(t, pr.p[1].(*ofi.Provider).Stats().SignalErrors.Load(), "%v", pr.p[1].(*ofi.Provider).Stats().LastSignalError())

	// Closed regions and QPs.
	require.NoError(t, imp.Close())
	require.ErrorIs(t, q.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: reg, Remote: imp, Len: 8}}), rdma.ErrClosed)
	require.NoError(t, q.Close())
	require.ErrorIs(t, q.Post(nil), rdma.ErrClosed)
	require.ErrorIs(t, q.Close(), rdma.ErrClosed)
}

// TestModeClaimAcrossQPs: a QP's memory of its last mode claim
// (claimMode) is dropped once another QP to the same peer changed the
// claims: after a reset at the target and an Add through QP b, an Inc
// through QP a is refused at the initiator, not sent to be dropped at the
// target.
func TestModeClaimAcrossQPs(t *testing.T) {
	pr := newPair(t, "tcp", 4096)
	a, cha := pr.qp(t, 0, 1)
	b, chb := pr.qp(t, 0, 1)
	imp := pr.imp[0][1]
	inc := []rdma.WQE{{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalInc, Region: imp, Off: 0, ModeOff: 8}}}
	add := []rdma.WQE{{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalAdd, Region: imp, Off: 0, ModeOff: 8, Value: 3}}}
	require.NoError(t, a.Post(inc))
	require.NoError(t, a.Post(inc))
	require.Equal(t, []error{nil, nil}, drain(t, a, cha, 2))
	waitWord(t, pr.reg[1].Bytes(), 0, 2)
	memword.Uint64(pr.reg[1].Bytes(), 0).Store(0) // a reset at the target
	memword.Uint64(pr.reg[1].Bytes(), 8).Store(0)
	require.NoError(t, b.Post(add))
	require.Equal(t, []error{nil}, drain(t, b, chb, 1))
	waitWord(t, pr.reg[1].Bytes(), 0, 3)
	require.ErrorIs(t, a.Post(inc), rdma.ErrMixedSignalOps)
	require.Zero(t, pr.p[1].(*ofi.Provider).Stats().SignalErrors.Load(), "%v", pr.p[1].(*ofi.Provider).Stats().LastSignalError())
}

// TestCQErrorFaultsQP: a CQ error entry becomes the QP's *rdma.QPError,
// carrying the provider's message (fi_cq_readerr, fi_cq_strerror); every
// later Post returns it. The error: on sockets the target refuses a write
// to a region it deregistered (sockets completes a write once the target
// acknowledged it); on tcp a local completion only means the bytes reached
// the socket, so the error is a write to a peer that closed.
func TestCQErrorFaultsQP(t *testing.T) {
	for _, prov := range []string{"tcp", "sockets"} {
		t.Run(prov, func(t *testing.T) {
			pr := newPair(t, prov, 1<<16)
			q, ch := pr.qp(t, 0, 1)
			if prov == "sockets" {
				require.NoError(t, pr.reg[1].Close()) // the target's key is gone
			} else {
				require.NoError(t, pr.p[1].Close())
			}
			var errs []error
			for n := 0; ; n++ {
				err := q.Post([]rdma.WQE{{WrID: 7, Op: rdma.OpWrite, Local: pr.reg[0], Remote: pr.imp[0][1], Len: 1 << 15}})
				if err != nil {
					errs = []error{err}
					break
				}
				errs = drain(t, q, ch, 1)
				if errs[0] != nil || n == 1000 {
					break
				}
			}
			var qe *rdma.QPError
			require.ErrorAs(t, errs[0], &qe)
			require.Equal(t, 1, qe.Peer)
			var fe *ofi.FabricError
			require.ErrorAs(t, errs[0], &fe)
			t.Logf("%s: %v", prov, errs[0])
			err := q.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: pr.reg[0], Remote: pr.imp[0][1], Len: 8}})
			require.ErrorAs(t, err, &qe, "later posts fail with the fault")
			_, perr := q.Progress()
			require.ErrorAs(t, perr, &qe, "so does Progress")
		})
	}
}

// TestCounterStrategyNeedsRMAEvent: tcp;ofi_rxm has no FI_RMA_EVENT, so
// asking for counter signals there is a clear ErrNotSupported.
func TestCounterStrategyNeedsRMAEvent(t *testing.T) {
	t.Setenv(ofi.EnvProvider, "tcp")
	skipIfNoProvider(t, "tcp")
	t.Setenv(ofi.EnvSignals, "counter")
	_, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "x"})
	require.ErrorIs(t, err, rdma.ErrNotSupported)
	require.ErrorContains(t, err, "FI_RMA_EVENT")
	t.Setenv(ofi.EnvSignals, "bogus")
	_, err = rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "x"})
	require.ErrorContains(t, err, ofi.EnvSignals)
}

// TestPollWait: a waiter can drive the provider itself (Poll, PollWait:
// the rdma.Poller methods gin's waits call) and sees the
// signal it waits for applied by its own call.
func TestPollWait(t *testing.T) {
	for _, prov := range providers {
		t.Run(prov, func(t *testing.T) {
			pr := newPair(t, prov, 4096)
			q, ch := pr.qp(t, 0, 1)
			target := pr.p[1].(*ofi.Provider)
			w := memword.Uint64(pr.reg[1].Bytes(), 0)
			for k := uint64(1); k <= 20; k++ {
				require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpSignal, Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp[0][1], Off: 0, ModeOff: 8}}}))
				deadline := time.Now().Add(10 * time.Second)
				for w.Load() != k {
					if time.Now().After(deadline) {
						t.Fatalf("signal %d never applied", k)
					}
					target.PollWait(time.Millisecond)
				}
			}
			drain(t, q, ch, 20)
		})
	}
}
