package gpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/rdmactor/rdmactor/transport/gpu/ring"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// localComms builds n goroutine ranks over gin.NewLocal (shm) and their GPU
// sides, closing both when t ends.
func localComms(t *testing.T, n int, cfg Config) []*Comm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gcs, err := gin.NewLocal(ctx, n, gin.Config{Signals: 8})
	require.NoError(t, err)
	gs := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gs[r], errs[r] = New(ctx, gcs[r], cfg)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	t.Cleanup(func() {
		for r := range n {
			assert.NoError(t, gs[r].Close())
			assert.NoError(t, gcs[r].Close())
		}
	})
	return gs
}

// registerAll registers a window of size bytes on every rank (collective).
func registerAll(t *testing.T, gs []*Comm, size int) []*Window {
	t.Helper()
	ws := make([]*Window, len(gs))
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[r], errs[r] = g.RegisterWindow(context.Background(), size)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	return ws
}

// TestFakeProxy drives the proxy path end to end on the fake driver: a Go
// model of the kernel (ring.Producer, the algorithm of gin__proxy.cuh)
// writes WQEs into rank 0's ring; rank 0's proxy actor posts them through
// gin (shm); the data, the device signal and the counter land where
// kernels read them. Device signals are gin's own signal words.
func TestFakeProxy(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) { testProxy(t, false) })
}

// TestFakeProxyVASignals is TestFakeProxy with the fallback for gin signal
// words that cannot be mapped: device signals are VA signals of a window.
func TestFakeProxyVASignals(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		vaSignalsOnly = true
		defer func() { vaSignalsOnly = false }()
		testProxy(t, true)
	})
}

// proxyRank0 is rank 0's ring as a kernel sees it.
func proxyRank0(t *testing.T, g0 *Comm) (*proxyRing, *ring.Producer) {
	t.Helper()
	rg := g0.rings[0]
	p, err := ring.NewProducer(fakeDeviceBytes(rg.dev, ring.DevBytes), rg.host.Bytes(), g0.cfg.RingDepth, g0.abortWord)
	require.NoError(t, err)
	return rg, p
}

func testProxy(t *testing.T, va bool) {
	gs := localComms(t, 2, Config{Path: PathProxy, RingDepth: 32, Signals: 4, Counters: 2})
	require.Equal(t, PathProxy, gs[0].Path())
	ws := registerAll(t, gs, 1<<16)
	g0, g1 := gs[0], gs[1]
	require.Equal(t, !va, g1.GinSignals())
	rg, p := proxyRank0(t, g0)

	// Kernels poll the words DevComm.signals names: gin's own value words
	// (gin.Comm.SignalWords, registered with the device), or the signal
	// window's in the fallback.
	dc := g1.DevComm()
	devSignals := binary.LittleEndian.Uint64(dc[dcSignals:])
	if va {
		assert.Equal(t, addrOf(g1.sigWin.Bytes()), devSignals)
	} else {
		assert.Equal(t, addrOf(g1.Gin().SignalWords()), devSignals)
	}
	kernelSees := func(s int) uint64 {
		return binary.LittleEndian.Uint64(fakeDeviceBytes(cuda.DevicePtr(devSignals), 8*g1.nsig)[8*s:])
	}

	payload := bytes.Repeat([]byte("gpu-proxy"), 1000)
	require.NoError(t, ws[0].Write(0, payload))
	var upTo uint64
	var err error
	// More WQEs than the ring holds: the producer waits for room.
	const posts = 40
	for k := range posts {
		upTo, err = p.Post(ring.WQE{Op: ring.OpPut, Peer: 1, DstWindow: uint32(ws[0].id), SrcWindow: uint32(ws[0].id),
			DstOff: uint64(k * 1024), SrcOff: 0, Bytes: uint64(len(payload)), Remote: ring.RemoteInc, Signal: 1,
			CounterInc: true, Counter: 1})
		require.NoError(t, err)
	}
	require.NoError(t, p.Flush(upTo))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = g1.WaitSignal(ctx, 1, posts, 64)
	require.NoError(t, err)
	assert.Equal(t, uint64(posts), kernelSees(1))
	x1, err := g1.Gin().Context(0)
	require.NoError(t, err)
	if !va {
		v, err := x1.ReadSignal(1, 64)
		require.NoError(t, err)
		assert.Equal(t, uint64(posts), v, "device signal 1 is gin signal 1")
	}
	got := make([]byte, len(payload))
	require.NoError(t, ws[1].Read((posts-1)*1024, got))
	assert.Equal(t, payload, got)
	c, err := g0.ReadCounter(1, 56)
	require.NoError(t, err)
	assert.Equal(t, uint64(posts), c, "flush returned, so every CounterInc ticked")

	// PutValue and a SignalAdd, and the device signal seen from Go.
	_, err = p.Post(ring.WQE{Op: ring.OpPutValue, Peer: 1, DstWindow: uint32(ws[0].id), DstOff: 60000, ValueSize: 4,
		Bytes: 0xfeedf00d, Remote: ring.RemoteAdd, Signal: 2, SignalValue: 5})
	require.NoError(t, err)
	_, err = g1.WaitSignal(ctx, 2, 5, 64)
	require.NoError(t, err)
	b4 := make([]byte, 4)
	require.NoError(t, ws[1].Read(60000, b4))
	assert.Equal(t, uint32(0xfeedf00d), binary.LittleEndian.Uint32(b4))

	// A Get reads rank 1's landed payload back into rank 0's window; the
	// flush of its sequence number means it landed and its counter ticked.
	upTo, err = p.Post(ring.WQE{Op: ring.OpGet, Peer: 1, DstWindow: uint32(ws[0].id), SrcWindow: uint32(ws[0].id),
		DstOff: 50000, SrcOff: (posts - 1) * 1024, Bytes: uint64(len(payload)), CounterInc: true, Counter: 1})
	require.NoError(t, err)
	require.NoError(t, p.Flush(upTo))
	require.NoError(t, ws[0].Read(50000, got))
	assert.Equal(t, payload, got, "get")
	c, err = g0.ReadCounter(1, 56)
	require.NoError(t, err)
	assert.Equal(t, uint64(posts+1), c, "the get's CounterInc")

	// Host code signals the same device words through gin.
	act, err := g1.SignalInc(3)
	require.NoError(t, err)
	require.NoError(t, x1.Signal(g1.Gin().World(), 0, act))
	if !va {
		require.NoError(t, x1.Signal(g1.Gin().World(), 0, gin.SignalInc(3)), "the same action")
	}
	want3 := map[bool]uint64{false: 2, true: 1}[va]
	_, err = g0.WaitSignal(ctx, 3, want3, 64)
	require.NoError(t, err)

	// A batch to two peers, as the lanes of a warp post it: the proxy
	// aggregates gin's doorbells and rings each peer once, after its last
	// WQE; everything lands, loopback included.
	id := uint32(ws[0].id)
	_, err = p.PostN([]ring.WQE{
		{Op: ring.OpPutValue, Peer: 0, DstWindow: id, DstOff: 100, ValueSize: 8, Bytes: 11, Remote: ring.RemoteInc},
		{Op: ring.OpPutValue, Peer: 1, DstWindow: id, DstOff: 100, ValueSize: 8, Bytes: 22, Remote: ring.RemoteInc},
		{Op: ring.OpPutValue, Peer: 0, DstWindow: id, DstOff: 108, ValueSize: 8, Bytes: 33, Remote: ring.RemoteInc},
		{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteInc},
	})
	require.NoError(t, err)
	_, err = g0.WaitSignal(ctx, 0, 2, 64)
	require.NoError(t, err)
	_, err = g1.WaitSignal(ctx, 0, 2, 64)
	require.NoError(t, err)
	b16 := make([]byte, 16)
	require.NoError(t, ws[0].Read(100, b16))
	assert.Equal(t, []uint64{11, 33}, []uint64{binary.LittleEndian.Uint64(b16), binary.LittleEndian.Uint64(b16[8:])})
	require.NoError(t, ws[1].Read(100, b16[:8]))
	assert.Equal(t, uint64(22), binary.LittleEndian.Uint64(b16))

	// A WQE naming a window that does not exist fails the proxy, which
	// aborts the rank's kernels; the supervisor records the fault and stops
	// the ring's actor.
	seq, err := p.Post(ring.WQE{Op: ring.OpPut, Peer: 1, DstWindow: 99, SrcWindow: 0, Bytes: 8})
	require.NoError(t, err)
	requireFault(t, g0, rg, 0, seq-1, gin.ErrBadArgument)
	assert.Empty(t, g1.Faults(), "rank 1's proxy is fine")
}

// requireFault waits for the supervisor's record of ring rg's fault and
// checks what a fault must do: Err and Faults name it, the abort flag is
// set, the ring's status says failed, its actor stopped.
func requireFault(t *testing.T, g *Comm, rg *proxyRing, ctxIndex int, seq uint64, want error) {
	t.Helper()
	require.Eventually(t, func() bool { return len(g.Faults()) > 0 }, 5*time.Second, time.Millisecond)
	fs := g.Faults()
	require.Len(t, fs, 1)
	assert.ErrorIs(t, fs[0], want)
	assert.Equal(t, ctxIndex, fs[0].Context)
	assert.Equal(t, seq, fs[0].Seq)
	var pe *ProxyError
	require.ErrorAs(t, g.Err(), &pe)
	assert.Same(t, fs[0], pe)
	assert.True(t, g.Aborted())
	assert.NotZero(t, rg.r.Status())
	select {
	case <-rg.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not stop the failed ring's actor")
	}
}

// TestFakeProxyMixedSignals: device signals are gin's, so gin's
// SignalInc/SignalAdd check covers kernels' signals: a mix between resets
// fails the proxy with gin.ErrMixedSignalOps; the fault reaches the ring
// actor's supervisor, and the kernel's later waits (flush, room in the
// ring) return because the abort flag is set.
func TestFakeProxyMixedSignals(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		gs := localComms(t, 2, Config{Path: PathProxy, RingDepth: 32, Signals: 4})
		g0, g1 := gs[0], gs[1]
		rg, p := proxyRank0(t, g0)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()

		_, err := p.Post(ring.WQE{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteInc, Signal: 1})
		require.NoError(t, err)
		_, err = g1.WaitSignal(ctx, 1, 1, 64)
		require.NoError(t, err)
		// The host's reset clears gin's mode: SignalAdd may follow.
		require.NoError(t, g1.ResetSignal(1))
		_, err = p.Post(ring.WQE{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteAdd, Signal: 1, SignalValue: 5})
		require.NoError(t, err)
		_, err = g1.WaitSignal(ctx, 1, 5, 64)
		require.NoError(t, err)
		// Go code mixing in is caught the same way.
		x0, err := g0.Gin().Context(0)
		require.NoError(t, err)
		inc, err := g0.SignalInc(1)
		require.NoError(t, err)
		assert.ErrorIs(t, x0.Signal(g0.Gin().World(), 1, inc), gin.ErrMixedSignalOps)
		// And so is a kernel's.
		seq, err := p.Post(ring.WQE{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteInc, Signal: 1})
		require.NoError(t, err)
		requireFault(t, g0, rg, 0, seq-1, gin.ErrMixedSignalOps)
		v, err := g1.ReadSignal(1, 64)
		require.NoError(t, err)
		assert.Equal(t, uint64(5), v, "the refused signal did not land")

		// The kernel's later waits return: a flush for a WQE the dead proxy
		// will never complete, and a post into a full ring.
		upTo, err := p.Post(ring.WQE{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteAdd, Signal: 1, SignalValue: 1})
		require.NoError(t, err)
		assert.ErrorIs(t, p.Flush(upTo), ring.ErrAborted)
		for range 2 * g0.cfg.RingDepth {
			if _, err = p.Post(ring.WQE{Op: ring.OpSignal, Peer: 1, Remote: ring.RemoteAdd, Signal: 1, SignalValue: 1}); err != nil {
				break
			}
		}
		assert.ErrorIs(t, err, ring.ErrAborted)
		// A kernel's Wait reports it.
		assert.ErrorIs(t, g0.Wait(ctx), gin.ErrMixedSignalOps)
	})
}

// TestFakePeerLost: gin's notice of a lost peer fails every ring through
// its actor (gin refuses every later post) and aborts the kernels.
func TestFakePeerLost(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		gs := localComms(t, 2, Config{Path: PathProxy, RingDepth: 32, Signals: 4})
		lost := &rdma.PeerLostError{Rank: 1, Reason: "killed"}
		gs[0].peerLost(lost)
		requireFault(t, gs[0], gs[0].rings[0], 0, 0, gin.ErrPeerLost)

		lsa := localComms(t, 2, Config{Path: PathLSA, Signals: 4})
		lsa[0].peerLost(lost)
		assert.True(t, lsa[0].Aborted())
		assert.ErrorIs(t, lsa[0].Err(), gin.ErrPeerLost)
		assert.Empty(t, lsa[0].Faults())
	})
}

// TestFakeWindowClose: Window.Close deregisters collectively (gin's
// Window.Close on the proxy path): afterwards the window is unusable from
// Go, and a WQE naming it fails the proxy with gin.ErrClosed; other windows
// are unaffected.
func TestFakeWindowClose(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		for _, path := range []Path{PathProxy, PathLSA} {
			gs := localComms(t, 2, Config{Path: path, RingDepth: 32, Signals: 4})
			ws := registerAll(t, gs, 4096)
			keep := registerAll(t, gs, 4096)
			closeAll(t, gs, ws)
			assert.ErrorIs(t, ws[0].Write(0, []byte{1}), ErrClosed, "%v", path)
			assert.ErrorIs(t, ws[0].Close(context.Background()), ErrClosed, "%v: second close", path)
			require.NoError(t, keep[1].Write(0, []byte{7}))
			if path == PathLSA {
				assert.Empty(t, ws[0].allocs)
				continue
			}
			x, err := gs[0].Gin().Context(0)
			require.NoError(t, err)
			err = x.Put(gs[0].Gin().World(), 1, ws[0].Gin(), 0, keep[0].Gin(), 0, 8, gin.None, gin.LocalNone)
			assert.ErrorIs(t, err, gin.ErrClosed)
			rg, p := proxyRank0(t, gs[0])
			seq, err := p.Post(ring.WQE{Op: ring.OpPutValue, Peer: 1, DstWindow: uint32(keep[0].id), ValueSize: 8, Bytes: 9})
			require.NoError(t, err)
			require.NoError(t, p.Flush(seq))
			seq, err = p.Post(ring.WQE{Op: ring.OpPutValue, Peer: 1, DstWindow: uint32(ws[0].id), ValueSize: 8, Bytes: 9})
			require.NoError(t, err)
			requireFault(t, gs[0], rg, 0, seq-1, gin.ErrClosed)
		}
	})
}

// TestFakeRegisterWindowFails: a registration that fails on a rank fails
// on every rank, none waiting for the others (unequal sizes here).
func TestFakeRegisterWindowFails(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		for _, path := range []Path{PathProxy, PathLSA} {
			gs := localComms(t, 2, Config{Path: path, Signals: 4})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for r, g := range gs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[r] = g.RegisterWindow(ctx, 4096*(r+1))
				}()
			}
			wg.Wait()
			cancel()
			for r, err := range errs {
				assert.ErrorIs(t, err, ErrBadArgument, "%v, rank %d", path, r)
			}
			// Both go on: the next registration works.
			registerAll(t, gs, 4096)
		}
	})
}

// closeAll closes window ws[r] on every rank (collective).
func closeAll(t *testing.T, gs []*Comm, ws []*Window) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = ws[r].Close(ctx)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// TestFakeLSA checks the LSA path's wiring on the fake driver: every
// rank's window table holds every rank's pointer, and DevComm carries the
// path, sizes and tables.
func TestFakeLSA(t *testing.T) {
	gputest.InFakeDriver(t, func(t *testing.T) {
		gs := localComms(t, 3, Config{Path: PathLSA, Signals: 5, Barriers: 2})
		require.Equal(t, PathLSA, gs[0].Path())
		ws := registerAll(t, gs, 4096)
		for r, g := range gs {
			dc := g.DevComm()
			le := binary.LittleEndian
			assert.Equal(t, uint32(r), le.Uint32(dc[dcRank:]))
			assert.Equal(t, uint32(3), le.Uint32(dc[dcSize:]))
			assert.Equal(t, uint32(devPathLSA), le.Uint32(dc[dcPath:]))
			assert.Equal(t, uint32(5), le.Uint32(dc[dcNSignals:]))
			assert.Equal(t, uint32(2), le.Uint32(dc[dcNBarriers:]))
			desc := make([]byte, windowDescBytes)
			require.NoError(t, g.ctx.CopyFromDevice(desc, ws[r].Handle()))
			assert.Equal(t, uint64(4096), le.Uint64(desc[0:]))
			assert.Equal(t, uint64(ws[r].Ptr()), le.Uint64(desc[8:]))
			table := make([]byte, 8*3)
			require.NoError(t, g.ctx.CopyFromDevice(table, cudaPtr(le.Uint64(desc[16:]))))
			for q := range gs {
				assert.Equal(t, uint64(ws[q].Ptr()), le.Uint64(table[8*q:]), "rank %d's table, entry %d", r, q)
			}
			sigs := make([]byte, 8*3)
			require.NoError(t, g.ctx.CopyFromDevice(sigs, cudaPtr(le.Uint64(dc[dcPeerSignals:]))))
			assert.Equal(t, le.Uint64(dc[dcSignals:]), le.Uint64(sigs[8*r:]), "own signals in the peer table")
		}
		// Host-side signal words on LSA are device memory.
		require.NoError(t, gs[1].signals.store(4, 77))
		v, err := gs[1].ReadSignal(4, 64)
		require.NoError(t, err)
		assert.Equal(t, uint64(77), v)
		_, err = gs[1].ReadSignal(5, 64)
		assert.ErrorIs(t, err, gin.ErrUnknownSignal, "barrier signals are not user signals")
		_, err = gs[1].SignalInc(0)
		assert.ErrorIs(t, err, ErrNotSupported)
	})
}

func TestDevCommEncoding(t *testing.T) {
	d := devComm{rank: 1, size: 2, lsaSize: 2, path: 1, nSignals: 3, nCounters: 4, nBarriers: 5, nContexts: 6,
		signals: 7, peerSignals: 8, counters: 9, shadows: 10, abortFlag: 11, status: 12, rings: 13}.encode()
	le := binary.LittleEndian
	for off, want := range map[int]uint32{0: 1, 4: 2, 8: 2, 12: 1, 16: 3, 20: 4, 24: 5, 28: 6} {
		assert.Equal(t, want, le.Uint32(d[off:]), "offset %d", off)
	}
	for off, want := range map[int]uint64{32: 7, 40: 8, 48: 9, 56: 10, 64: 11, 72: 12, 80: 13, 88: 0, 120: 0} {
		assert.Equal(t, want, le.Uint64(d[off:]), "offset %d", off)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{}
	require.NoError(t, c.setDefaults(2, 64))
	assert.Equal(t, Config{Signals: 32, Counters: 64, Barriers: 32, Contexts: 2, RingDepth: 1024, AbortGrace: 10 * time.Second}, c)
	c = Config{}
	require.NoError(t, c.setDefaults(1, 8))
	assert.Equal(t, [2]int{4, 4}, [2]int{c.Signals, c.Barriers}, "signals and barriers share the gin signals")
	bad := []Config{{RingDepth: 3}, {Contexts: 3}, {Signals: -1}, {Path: 7}, {Signals: 64}, {Signals: 60, Barriers: 5}}
	for _, b := range bad {
		assert.ErrorIs(t, b.setDefaults(2, 64), ErrBadArgument, "%+v", b)
	}
}

func cudaPtr(v uint64) cuda.DevicePtr { return cuda.DevicePtr(v) }
