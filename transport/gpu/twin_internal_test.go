package gpu

import (
	_ "embed"
	"encoding/binary"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/rdmactor/rdmactor/transport/gpu/ring"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

//go:embed testdata/semantics.cu
var semanticsCU string

// runTwin compiles semantics.cu for GPU 0, runs kernel name with one block
// of threads threads, and returns out (n words) after it.
func runTwin(t *testing.T, name string, threads int, n int, args func(ctx *cuda.Context) []any) []uint64 {
	t.Helper()
	gputest.SkipIfNoGPU(t)
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	ctx, err := dev.PrimaryContext()
	require.NoError(t, err)
	defer ctx.Close()
	cubin, err := Compile(dev, "semantics.cu", semanticsCU)
	require.NoError(t, err)
	mod, err := ctx.LoadModule(cubin)
	require.NoError(t, err)
	defer mod.Close()
	f, err := mod.Function(name)
	require.NoError(t, err)
	out, err := ctx.MemAlloc(8 * n)
	require.NoError(t, err)
	defer ctx.MemFree(out)
	st, err := ctx.NewStream()
	require.NoError(t, err)
	defer st.Close()
	a := append(args(ctx), out)
	require.NoError(t, f.Launch(cuda.Dim3{X: 1}, cuda.Dim3{X: threads}, 0, st, a...))
	require.NoError(t, st.Synchronize())
	b := make([]byte, 8*n)
	require.NoError(t, ctx.CopyFromDevice(b, out))
	words := make([]uint64, n)
	for i := range words {
		words[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return words
}

// TestLayoutTwin compares the layouts of impl/gin__types.cuh, as the
// compiler laid them out, with the Go constants of layout.go and package
// ring, the WaitResult codes, and a WQE packed by the device with
// ring.WQE.Encode.
func TestLayoutTwin(t *testing.T) {
	want := []uint64{
		devCommBytes, dcRank, dcSize, dcLSASize, dcPath, dcNSignals, dcNCounters, dcNBarriers, dcNContexts,
		dcSignals, dcPeerSignals, dcCounters, dcShadows, dcAbortFlag, dcStatus, dcRings,
		windowDescBytes, 0, 8, 16, 24,
		ringDescBytes, 0, 8, 16,
		ring.DevReserved, ring.DevReady, ring.DevBytes,
		ring.HostDoorbell, ring.HostConsumed, ring.HostCompleted, ring.HostStatus, ring.HostEntries, ring.WQEBytes,
		devPathLSA, devPathProxy,
		devErrOutOfBounds, devErrPeerOutOfRange, devErrUnknownSignal, devErrUnknownCounter, devErrBadArgument,
		uint64(WaitOK), uint64(WaitAborted), uint64(WaitTimeout), uint64(WaitInvalid),
	}
	w := ring.WQE{Seq: 0x11223343, Op: ring.OpPut, Remote: ring.RemoteAdd, CounterInc: true, ValueSize: 4, Peer: 0x55,
		Signal: 0x66, DstWindow: 0x77, SrcWindow: 0x88, Counter: 0x99, DstOff: 0xaa, SrcOff: 0xbb, Bytes: 0xcc, SignalValue: 0xdd}
	b := make([]byte, ring.WQEBytes)
	w.Encode(b)
	for k := range 8 {
		want = append(want, binary.LittleEndian.Uint64(b[8*k:]))
	}
	got := runTwin(t, "layout_twin", 1, len(want), func(*cuda.Context) []any { return nil })
	assert.Equal(t, want, got, "(device, Go) layouts differ")
}

// TestRollingTwin compares the device's rolling comparison with the Go
// model (gin.RollingLE) across wraparound cases.
func TestRollingTwin(t *testing.T) {
	type c struct {
		a, b uint64
		bits int
	}
	cs := []c{{0, 0, 64}, {0, 1, 64}, {1, 0, 64}, {^uint64(0), 0, 64}, {0, ^uint64(0), 64}, {0xFFFFFFF0, 0x10, 32},
		{0x10, 0xFFFFFFF0, 32}, {0, 1 << 63, 64}, {0, 1<<63 - 1, 64}, {5, 5 + 1<<31, 32}, {5, 4 + 1<<31, 32},
		{0xFFFFFFFFFFFFF0, 3, 56}, {7, 0, 3}, {0, 3, 3}, {0, 4, 3}, {1 << 40, 1<<40 + 1, 16}}
	n := len(cs)
	gotw := runTwin(t, "rolling_twin", 32, n, func(ctx *cuda.Context) []any {
		ab := make([]byte, 16*n)
		bits := make([]byte, 4*n)
		for i, x := range cs {
			binary.LittleEndian.PutUint64(ab[8*i:], x.a)
			binary.LittleEndian.PutUint64(ab[8*(n+i):], x.b)
			binary.LittleEndian.PutUint32(bits[4*i:], uint32(x.bits))
		}
		p, err := ctx.MemAlloc(len(ab))
		require.NoError(t, err)
		q, err := ctx.MemAlloc(len(bits))
		require.NoError(t, err)
		require.NoError(t, ctx.CopyToDevice(p, ab))
		require.NoError(t, ctx.CopyToDevice(q, bits))
		t.Cleanup(func() { ctx.MemFree(p); ctx.MemFree(q) })
		return []any{p, p + cuda.DevicePtr(8*n), q, int32(n)}
	})
	// out is int[n]: two per word.
	for i, x := range cs {
		dev := uint32(gotw[i/2] >> (32 * (i % 2)))
		m, _ := mask(x.bits, 64)
		want := gin.RollingLE(x.a, x.b, m)
		assert.Equal(t, want, dev == 1, "rollingLE(%#x, %#x, %d bits)", x.a, x.b, x.bits)
	}
}
