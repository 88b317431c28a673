package shm

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

const (
	window  = 2<<20 + 4096 // rank 1's window in most tests
	sigOff  = 0            // signal word
	modeOff = 8            // its mode word
)

func TestOpenRegistered(t *testing.T) {
	assert.Contains(t, rdma.Providers(), "shm")
	_, err := Open(rdma.Config{Rank: 0, Size: 1, Job: "a/b"})
	require.Error(t, err, "job names with '/' would leave the shm directory")
	_, err = Open(rdma.Config{Rank: 0, Size: 1, Job: "a*"})
	require.Error(t, err, "glob characters would widen Cleanup")
	_, err = Open(rdma.Config{Rank: 2, Size: 2, Job: "x"})
	require.Error(t, err)
	p, err := Open(rdma.Config{Rank: 0, Size: 1, Job: "x"})
	require.NoError(t, err)
	assert.Equal(t, rdma.Capabilities{StrongSignals: true, MaxSignals: 1 << 16, MaxPutSize: 1 << 30,
		SignalAdd: true, VASignals: true, LoadStore: true, Get: true, Inline: true}, p.Capabilities())
	assert.Equal(t, "shm", p.Name())
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), rdma.ErrClosed)
}

func TestPutSizes(t *testing.T) {
	for _, tc := range []struct {
		name              string
		n, srcOff, dstOff int
	}{
		{"1B", 1, 3, 5},
		{"7B", 7, 1, 13},
		{"4KiB", 4096, 7, 4097},
		{"1MiB", 1 << 20, 11, 1<<20 + 3},
		{"0B", 0, 0, window},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPair(t, 1<<20+64, window)
			src := pr.src.Bytes()
			fill(src, 1)
			require.NoError(t, pr.qp.Post([]rdma.WQE{{
				WrID: 42, Op: rdma.OpWrite,
				Local: pr.src, LocalOff: tc.srcOff,
				Remote: pr.imp, RemoteOff: tc.dstOff, Len: tc.n,
			}}))
			assert.Equal(t, []uint64{42}, pr.done)
			dst := pr.dst.Bytes()
			require.Equal(t, src[tc.srcOff:tc.srcOff+tc.n], dst[tc.dstOff:tc.dstOff+tc.n])
			assert.Equal(t, make([]byte, tc.dstOff), dst[:tc.dstOff], "bytes before the put")
			assert.Equal(t, make([]byte, window-tc.dstOff-tc.n), dst[tc.dstOff+tc.n:], "bytes after the put")
		})
	}
}

func TestSignals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		op    rdma.Opcode
		mode  rdma.SignalMode
		value uint64
		times int
		want  uint64 // signal after times posts
		mode0 uint64 // mode word after
	}{
		{"write+inc", rdma.OpWrite, rdma.SignalInc, 1, 1, 1, rdma.ModeInc},
		{"inc ignores value", rdma.OpWrite, rdma.SignalInc, 9, 3, 3, rdma.ModeInc},
		{"write+add 5", rdma.OpWrite, rdma.SignalAdd, 5, 1, 5, rdma.ModeAdd},
		{"signal add twice", rdma.OpSignal, rdma.SignalAdd, 5, 2, 10, rdma.ModeAdd},
		{"signal inc", rdma.OpSignal, rdma.SignalInc, 1, 1, 1, rdma.ModeInc},
		{"va add, no mode word", rdma.OpWrite, rdma.SignalVA, 1 << 40, 2, 2 << 40, rdma.ModeUnset},
		{"write, no signal", rdma.OpWrite, rdma.SignalNone, 5, 1, 0, rdma.ModeUnset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPair(t, 64, window)
			fill(pr.src.Bytes(), 9)
			for i := range tc.times {
				require.NoError(t, pr.qp.Post([]rdma.WQE{{
					WrID: uint64(i), Op: tc.op, Local: pr.src, Remote: pr.imp, RemoteOff: 100, Len: 64,
					Signal: rdma.Signal{Mode: tc.mode, Region: pr.imp, Off: sigOff, ModeOff: modeOff, Value: tc.value},
				}}))
			}
			assert.Equal(t, tc.want, word(pr.dst, sigOff))
			assert.Equal(t, tc.mode0, word(pr.dst, modeOff))
			if tc.op == rdma.OpWrite {
				assert.Equal(t, pr.src.Bytes(), pr.dst.Bytes()[100:164])
			}
			assert.Len(t, pr.done, tc.times)
		})
	}
}

func TestMixedSignalOps(t *testing.T) {
	pr := newPair(t, 64, window)
	fill(pr.src.Bytes(), 3)
	put := func(mode rdma.SignalMode, value uint64) error {
		return pr.qp.Post([]rdma.WQE{{
			Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 64, Len: 64,
			Signal: rdma.Signal{Mode: mode, Region: pr.imp, Off: sigOff, ModeOff: modeOff, Value: value},
		}})
	}
	require.NoError(t, put(rdma.SignalInc, 1))
	clear(pr.dst.Bytes()[64:128])

	err := put(rdma.SignalAdd, 5)
	require.ErrorIs(t, err, rdma.ErrMixedSignalOps)
	assert.Contains(t, err.Error(), "offset 8")
	assert.Equal(t, uint64(1), word(pr.dst, sigOff), "signal unchanged")
	assert.Equal(t, make([]byte, 64), pr.dst.Bytes()[64:128], "data of the failed put not written")

	// Reset (owner side): signal and mode word to 0; then Add is accepted.
	memword.Uint64(pr.dst.Bytes(), sigOff).Store(0)
	memword.Uint64(pr.dst.Bytes(), modeOff).Store(0)
	require.NoError(t, put(rdma.SignalAdd, 5))
	assert.Equal(t, uint64(5), word(pr.dst, sigOff))
	require.ErrorIs(t, put(rdma.SignalInc, 1), rdma.ErrMixedSignalOps)
	assert.Equal(t, uint64(5), word(pr.dst, sigOff))

	// A VA signal on the same word is not mode-checked.
	require.NoError(t, put(rdma.SignalVA, 2))
	assert.Equal(t, uint64(7), word(pr.dst, sigOff))
}

func TestPostRejects(t *testing.T) {
	const huge = math.MaxInt
	type mut func(pr *pair, w *rdma.WQE)
	sig := func(mode rdma.SignalMode, off, modeOff int) mut {
		return func(pr *pair, w *rdma.WQE) {
			w.Signal = rdma.Signal{Mode: mode, Region: pr.imp, Off: off, ModeOff: modeOff, Value: 1}
		}
	}
	for _, tc := range []struct {
		name   string
		mut    mut
		target error // nil: any error
		// provider: the bare QP rejects it too (it needs the provider's
		// state); the rest only a checking QP (rdma.Checked) rejects:
		// gin validates them before it builds a WQE.
		provider bool
	}{
		{"local off negative", func(_ *pair, w *rdma.WQE) { w.LocalOff = -1 }, rdma.ErrOutOfBounds, false},
		{"local past end", func(_ *pair, w *rdma.WQE) { w.LocalOff = 4096 - 10 }, rdma.ErrOutOfBounds, false},
		{"local off huge", func(_ *pair, w *rdma.WQE) { w.LocalOff = huge }, rdma.ErrOutOfBounds, false},
		{"remote past end", func(_ *pair, w *rdma.WQE) { w.RemoteOff = window - 10 }, rdma.ErrOutOfBounds, false},
		{"remote off huge", func(_ *pair, w *rdma.WQE) { w.RemoteOff = huge }, rdma.ErrOutOfBounds, false},
		{"remote off huge-len", func(_ *pair, w *rdma.WQE) { w.RemoteOff = huge - 10 }, rdma.ErrOutOfBounds, false},
		{"len huge", func(_ *pair, w *rdma.WQE) { w.Len = huge }, rdma.ErrOutOfBounds, false},
		{"len negative", func(_ *pair, w *rdma.WQE) { w.Len = -1 }, rdma.ErrOutOfBounds, false},
		{"signal past end", sig(rdma.SignalInc, window, -1), rdma.ErrOutOfBounds, false},
		{"signal straddles end", sig(rdma.SignalInc, window-4, -1), rdma.ErrOutOfBounds, false},
		{"signal huge", sig(rdma.SignalInc, huge, -1), rdma.ErrOutOfBounds, false},
		{"signal negative", sig(rdma.SignalAdd, -8, -1), rdma.ErrOutOfBounds, false},
		{"signal misaligned", sig(rdma.SignalInc, 4, -1), rdma.ErrOutOfBounds, false},
		{"va signal misaligned", sig(rdma.SignalVA, 12, -1), rdma.ErrOutOfBounds, false},
		{"mode word misaligned", sig(rdma.SignalInc, 0, 12), rdma.ErrOutOfBounds, false},
		{"mode word past end", sig(rdma.SignalAdd, 0, window), rdma.ErrOutOfBounds, false},
		{"mode word is the signal", sig(rdma.SignalAdd, 16, 16), rdma.ErrOutOfBounds, false},
		{"unknown signal mode", sig(rdma.SignalMode(9), 0, -1), rdma.ErrNotSupported, true},
		{"unknown opcode", func(_ *pair, w *rdma.WQE) { w.Op = 77 }, rdma.ErrNotSupported, true},
		{"nil local", func(_ *pair, w *rdma.WQE) { w.Local = nil }, nil, true},
		{"nil remote", func(_ *pair, w *rdma.WQE) { w.Remote = nil }, nil, true},
		{"nil signal region", func(_ *pair, w *rdma.WQE) { w.Signal.Mode = rdma.SignalInc; w.Signal.Region = nil }, nil, true},
		{"foreign local", func(pr *pair, w *rdma.WQE) { w.Local = pr.dst }, nil, true},
		{"signal without mode", func(_ *pair, w *rdma.WQE) { w.Op = rdma.OpSignal }, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPair(t, 4096, window)
			fill(pr.src.Bytes(), 5)
			w := rdma.WQE{WrID: 2, Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 64, Len: 100,
				Signal: rdma.Signal{ModeOff: -1}}
			tc.mut(pr, &w)
			ok := rdma.WQE{WrID: 1, Op: rdma.OpNop}
			after := rdma.WQE{WrID: 3, Op: rdma.OpSignal,
				Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 16, ModeOff: -1}}
			qps := []rdma.QP{rdma.CheckQP(pr.qp, 1<<30)}
			if tc.provider {
				qps = append(qps, pr.qp)
			}
			for _, q := range qps {
				pr.done = nil
				err := q.Post([]rdma.WQE{ok, w, after})
				require.Error(t, err)
				if tc.target != nil {
					require.ErrorIs(t, err, tc.target)
				}
				assert.Contains(t, err.Error(), "wqe 1")
				assert.Equal(t, []uint64{1}, pr.done, "the WQE before completed, the failing one and the one after did not")
				assert.Equal(t, make([]byte, window), pr.dst.Bytes(), "nothing written")
			}
		})
	}
}

func TestCompletionsInOrder(t *testing.T) {
	pr := newPair(t, 64, window)
	sig := rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: sigOff, ModeOff: modeOff}
	var wqes []rdma.WQE
	for i := range 10 {
		w := rdma.WQE{WrID: 1000 + uint64(i), Op: rdma.Opcode(i % 3), Local: pr.src, Remote: pr.imp,
			RemoteOff: 64 + i, Len: 8}
		if w.Op != rdma.OpNop {
			w.Signal = sig
		}
		wqes = append(wqes, w)
	}
	require.NoError(t, pr.qp.Post(wqes[:4]))
	require.NoError(t, pr.qp.Post(wqes[4:]))
	require.NoError(t, pr.qp.Post(nil))
	want := make([]uint64, 10)
	for i := range want {
		want[i] = 1000 + uint64(i)
	}
	assert.Equal(t, want, pr.done)
	assert.Equal(t, uint64(6), word(pr.dst, sigOff), "3 writes and 3 signals")
	n, err := pr.qp.Progress()
	assert.NoError(t, err)
	assert.Zero(t, n)
}

func TestLoopback(t *testing.T) {
	p := openRank(t, testJob(t), 0, 1)
	r, err := p.RegisterMemory(4096, 0)
	require.NoError(t, err)
	src, err := p.RegisterMemory(16, rdma.LocalOnly)
	require.NoError(t, err)
	copy(src.Bytes(), "loopback bytes!!")
	for _, unlinkFirst := range []bool{false, true} {
		if unlinkFirst {
			require.NoError(t, r.(Unlinker).Unlink())
		}
		imp, err := p.Import(0, r.Descriptor())
		require.NoError(t, err, "unlinked first: %v", unlinkFirst)
		q, err := p.Connect(0, func(uint64, error) {})
		require.NoError(t, err)
		require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: src, Remote: imp, RemoteOff: 32, Len: 16,
			Signal: rdma.Signal{Mode: rdma.SignalInc, Region: imp, Off: 8, ModeOff: 0}}}))
		assert.Equal(t, "loopback bytes!!", string(r.Bytes()[32:48]))
		require.NoError(t, imp.Close())
		require.NoError(t, q.Close())
	}
	assert.Equal(t, uint64(2), word(r.(*Region), 8))

	// Another descriptor with the region's sequence number is not it.
	bad := descriptor{rank: 0, seq: r.(*Region).seq, size: 4096, files: modeMemfd, pid: os.Getpid(), fd: 0}
	_, err = p.Import(0, bad.encode())
	require.ErrorIs(t, err, errBadDescriptor)
}

func TestClosed(t *testing.T) {
	put := func(pr *pair) error {
		return pr.qp.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, Len: 8}})
	}
	for _, tc := range []struct {
		name  string
		close func(pr *pair) error
	}{
		{"qp", func(pr *pair) error { return pr.qp.Close() }},
		{"provider", func(pr *pair) error { return pr.p0.Close() }},
		{"import", func(pr *pair) error { return pr.imp.Close() }},
		{"local", func(pr *pair) error { return pr.src.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPair(t, 64, 4096)
			require.NoError(t, put(pr))
			require.NoError(t, tc.close(pr))
			require.ErrorIs(t, put(pr), rdma.ErrClosed)
			require.ErrorIs(t, tc.close(pr), rdma.ErrClosed, "second close")
			assert.Equal(t, []uint64{0}, pr.done)
		})
	}
	t.Run("owner closed window", func(t *testing.T) {
		// The owner's Close unmaps its own mapping and removes the file;
		// the peer's import keeps the pages, so a put is not a fault.
		pr := newPair(t, 64, 4096)
		require.NoError(t, pr.dst.Close())
		assert.Nil(t, pr.dst.Bytes())
		require.NoError(t, put(pr))
	})
	t.Run("provider calls", func(t *testing.T) {
		pr := newPair(t, 64, 4096)
		desc := pr.dst.Descriptor()
		require.NoError(t, pr.p0.Close())
		_, err := pr.p0.RegisterMemory(8, 0)
		require.ErrorIs(t, err, rdma.ErrClosed)
		_, err = pr.p0.Import(1, desc)
		require.ErrorIs(t, err, rdma.ErrClosed)
		_, err = pr.p0.Connect(1, func(uint64, error) {})
		require.ErrorIs(t, err, rdma.ErrClosed)
		require.ErrorIs(t, pr.p0.Unlink(), rdma.ErrClosed)
		_, err = pr.qp.Progress()
		require.ErrorIs(t, err, rdma.ErrClosed)
	})
}
