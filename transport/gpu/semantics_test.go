package gpu_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/internal/gputest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The device-side twin of gin's semantics suite (gin/conformance): each
// case is a kernel of testdata/semantics.cu run by every rank at once,
// checking a sentence of the contract from inside the kernel. The same
// cases run
//   - on 2 GPUs, ranks as goroutines, LSA path (NVLink peer access):
//     TestSemanticsLSA;
//   - on 2 GPUs (or 1), ranks as processes, LSA path through CUDA IPC:
//     TestSemanticsLSAProcesses;
//   - on 1 GPU, ranks as processes, proxy path over shm:
//     TestSemanticsProxyProcesses;
//   - on 1 GPU, ranks as goroutines, proxy path: TestSemanticsProxyLocal.

const (
	roleCase  = "gpu-case"
	envCase   = "RDMACTOR_GPU_CASE"
	envPath   = "RDMACTOR_GPU_PATH"
	envDevice = "RDMACTOR_GPU_DEVICE"
)

// caseTimout bounds one case (RDMACTOR_GPU_CASE_TIMEOUT, default 60 s):
// kernels still waiting then are aborted.
var caseTimout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RDMACTOR_GPU_CASE_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 60 * time.Second
}()

func TestMain(m *testing.M) {
	testutils.Role(roleCase, roleRunCase)
	testutils.MainWithRoles(m)
}

// kcase is one kernel of semantics.cu and how to run and judge it.
type kcase struct {
	name   string
	kernel string
	window int                       // bytes of the case's window; 0 for none
	block  int                       // threads of the single block
	args   func(w *gpu.Window) []any // between DevComm and res
	want3  uint64                    // res[3] must equal this when nonzero
}

const (
	orderRounds, orderBlock = 32, 8 << 10
	ctrPuts, ctrBlock       = 16, 4 << 10
	flushBlock              = 1 << 20
	getBlock                = 256 << 10
	pvCount                 = 256
	barrierRounds           = 20
)

var cases = []kcase{
	{name: "Ordering", kernel: "ordering", window: 2 * orderRounds * orderBlock, block: 256,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(orderRounds), int32(orderBlock)} }},
	{name: "Rolling", kernel: "rolling", block: 1, want3: 0x100000010},
	{name: "Counters", kernel: "counters", window: 2 * ctrPuts * ctrBlock, block: 128, want3: ctrPuts,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(ctrPuts), int32(ctrBlock)} }},
	{name: "Flush", kernel: "flush", window: 3 * flushBlock, block: 256,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(flushBlock)} }},
	{name: "Get", kernel: "get", window: 3 * getBlock, block: 256,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(getBlock)} }},
	{name: "PutValue", kernel: "putvalue", window: 8192, block: 256,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(pvCount)} }},
	{name: "Barrier", kernel: "barrier", window: 64, block: 128, want3: barrierRounds,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(barrierRounds)} }},
	{name: "BarrierFences", kernel: "barrier_fences", window: 64, block: 128, want3: barrierRounds,
		args: func(w *gpu.Window) []any { return []any{w.Handle(), int32(barrierRounds)} }},
}

func caseByName(name string) (kcase, bool) {
	for _, c := range cases {
		if c.name == name {
			return c, true
		}
	}
	return kcase{}, false
}

// runCase is one rank's part of case c: register its window, run its
// kernel, read the verdict, and meet the other ranks at a barrier.
func runCase(ctx context.Context, g *gpu.Comm, c kcase) error {
	mod, err := g.Load("semantics.cu", semanticsSource())
	if err != nil {
		return err
	}
	defer mod.Close()
	f, err := mod.Function(c.kernel)
	if err != nil {
		return err
	}
	var w *gpu.Window
	if c.window > 0 {
		if w, err = g.RegisterWindow(ctx, c.window); err != nil {
			return err
		}
	}
	res, err := g.Context().MemAlloc(64)
	if err != nil {
		return err
	}
	defer g.Context().MemFree(res)
	args := []any{g.DevComm()}
	if c.args != nil {
		args = append(args, c.args(w)...)
	}
	args = append(args, res)
	// Setup calls (module load, allocation, and the frees of the previous
	// case) synchronize a CUDA context: ranks sharing one must not make them
	// while another rank's kernel already waits on them.
	if err := g.Gin().Barrier(ctx); err != nil {
		return err
	}
	start := time.Now()
	runErr := g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: c.block}, 0, args...)
	elapsed := time.Since(start)
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	r := make([]byte, 32)
	if err := g.Context().CopyFromDevice(r, res); err != nil {
		return errors.Join(append(errs, err)...)
	}
	wrong, first, aborted, v3 := le(r, 0), le(r, 1), le(r, 2), le(r, 3)
	if aborted != 0 {
		errs = append(errs, errors.New("a wait of the kernel was aborted"))
	}
	if wrong != 0 {
		errs = append(errs, fmt.Errorf("%d wrong values, the first at %#x", wrong, first))
	}
	if c.want3 != 0 && v3 != c.want3 {
		errs = append(errs, fmt.Errorf("result %#x, want %#x", v3, c.want3))
	}
	if err := g.DeviceError(); err != nil {
		errs = append(errs, err)
	}
	if err := g.Err(); err != nil {
		errs = append(errs, err)
	}
	fmt.Printf("rank %d: %s on the %v path, device %d: %v, %v\n", g.Rank(), c.name, g.Path(), g.Device().Ordinal(),
		verdict(errs), elapsed.Round(time.Microsecond))
	// No rank frees memory a peer's kernel may still write.
	if err := g.Gin().Barrier(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func verdict(errs []error) string {
	if len(errs) == 0 {
		return "ok"
	}
	return "FAILED: " + errors.Join(errs...).Error()
}

func le(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[8*i:]) }

// semanticsSource is testdata/semantics.cu.
func semanticsSource() string {
	b, err := testKernels.ReadFile("testdata/semantics.cu")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// newLocal builds n goroutine ranks (gin over shm) with GPU sides on
// devices[r], closed when t ends.
func newLocal(t testing.TB, n int, path gpu.Path, devices []int) []*gpu.Comm {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
	defer cancel()
	gcs, err := gin.NewLocal(ctx, n, gin.Config{})
	require.NoError(t, err)
	gs := make([]*gpu.Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := devices[r]
			gs[r], errs[r] = gpu.New(ctx, gcs[r], gpu.Config{Path: path, Device: &d})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, gc := range gcs {
			gc.Close()
		}
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		for r := range n {
			assert.NoError(t, gs[r].Close())
			assert.NoError(t, gcs[r].Close())
		}
	})
	return gs
}

// runLocal runs case c on every rank of gs at once.
func runLocal(t *testing.T, gs []*gpu.Comm, c kcase) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
	defer cancel()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = runCase(ctx, g, c)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

func TestSemanticsLSA(t *testing.T) {
	gputest.SkipIfFewerGPUs(t, 2)
	gs := newLocal(t, 2, gpu.PathLSA, []int{0, 1})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runLocal(t, gs, c) })
	}
}

func TestSemanticsProxyLocal(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	gs := newLocal(t, 2, gpu.PathProxy, []int{0, 0})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runLocal(t, gs, c) })
	}
}

// TestSemanticsProxyProcesses: two processes on one GPU through the proxy
// (the GPU time-slices their kernels; each CPU proxy posts over shm).
func TestSemanticsProxyProcesses(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testutils.RunRanks(t, 2, roleCase, envCase+"="+c.name, envPath+"=proxy", envDevice+"=0")
		})
	}
}

// TestSemanticsLSAProcesses: two processes, one GPU each where there are
// two (else both on one), their windows mapped through CUDA IPC.
func TestSemanticsLSAProcesses(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	for _, name := range []string{"Ordering", "Barrier", "BarrierFences", "PutValue"} {
		t.Run(name, func(t *testing.T) {
			testutils.RunRanks(t, 2, roleCase, envCase+"="+name, envPath+"=lsa")
		})
	}
}

// roleRunCase is a rank process of the *Processes tests.
func roleRunCase() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*caseTimout)
	defer cancel()
	c, ok := caseByName(os.Getenv(envCase))
	if !ok {
		return fmt.Errorf("no case %q", os.Getenv(envCase))
	}
	path, err := gpu.ParsePath(os.Getenv(envPath))
	if err != nil {
		return err
	}
	gc, err := gin.Init(ctx, gin.Config{})
	if err != nil {
		return err
	}
	defer gc.Close()
	cfg := gpu.Config{Path: path}
	if d := os.Getenv(envDevice); d != "" {
		n, err := strconv.Atoi(d)
		if err != nil {
			return err
		}
		cfg.Device = &n
	}
	g, err := gpu.New(ctx, gc, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	return runCase(ctx, g, c)
}

// TestAbort: a kernel waiting on a signal that never comes returns once
// the host sets the abort flag, on both paths, and Wait aborts by itself
// when its context ends.
func TestAbort(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	for _, path := range []gpu.Path{gpu.PathLSA, gpu.PathProxy} {
		t.Run(path.String(), func(t *testing.T) {
			g := newLocal(t, 1, path, []int{0})[0]
			mod, err := g.Load("semantics.cu", semanticsSource())
			require.NoError(t, err)
			defer mod.Close()
			f, err := mod.Function("wait_forever")
			require.NoError(t, err)
			res, err := g.Context().MemAlloc(64)
			require.NoError(t, err)
			defer g.Context().MemFree(res)

			require.NoError(t, g.Launch(f, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, g.DevComm(), res))
			time.Sleep(300 * time.Millisecond)
			done, err := g.Stream().Query()
			require.NoError(t, err)
			require.False(t, done, "the kernel returned without its signal")
			start := time.Now()
			g.Abort()
			require.NoError(t, g.Wait(context.Background()))
			t.Logf("kernel returned %v after Abort", time.Since(start))
			assert.Less(t, time.Since(start), 2*time.Second)
			r := make([]byte, 32)
			require.NoError(t, g.Context().CopyFromDevice(r, res))
			assert.Equal(t, uint64(1), le(r, 2), "waitSignal returned false")
			assert.Equal(t, uint64(1), le(r, 3), "aborted() saw the flag")

			// A deadline does the same by itself.
			g.ClearAbort()
			require.NoError(t, g.Launch(f, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, g.DevComm(), res))
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			err = g.Wait(ctx)
			assert.ErrorIs(t, err, gpu.ErrAborted)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			g.ClearAbort()
		})
	}
}

// TestDeviceErrors: calls the device must refuse are skipped and the
// first is reported as the gin sentinel.
func TestDeviceErrors(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	g := newLocal(t, 1, gpu.PathLSA, []int{0})[0]
	mod, err := g.Load("semantics.cu", semanticsSource())
	require.NoError(t, err)
	defer mod.Close()
	f, err := mod.Function("bad_calls")
	require.NoError(t, err)
	w, err := g.RegisterWindow(context.Background(), 4096)
	require.NoError(t, err)
	res, err := g.Context().MemAlloc(64)
	require.NoError(t, err)
	defer g.Context().MemFree(res)
	require.NoError(t, g.Run(context.Background(), f, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, g.DevComm(), w.Handle(), res))
	err = g.DeviceError()
	var de *gpu.DeviceError
	require.ErrorAs(t, err, &de)
	assert.ErrorIs(t, err, gin.ErrOutOfBounds)
	assert.Equal(t, uint32(4092), de.Detail)
	assert.NoError(t, g.DeviceError(), "reading clears it")
}

// TestProxyMixedSignals: on the proxy path device signals are gin's own,
// so gin's rule that a signal takes SignalInc or SignalAdd between resets,
// not both, covers kernels: the mix fails rank 0's proxy, its supervisor
// records the fault, and the abort it sets makes rank 0's kernel return
// from a wait nobody would end.
func TestProxyMixedSignals(t *testing.T) {
	gputest.SkipIfNoGPU(t)
	gs := newLocal(t, 2, gpu.PathProxy, []int{0, 0})
	require.True(t, gs[0].GinSignals(), "gin's signal words are mapped into the device")
	ctx, cancel := context.WithTimeout(context.Background(), caseTimout)
	defer cancel()
	res := make([][]byte, 2)
	runErrs := make([]error, 2)
	parallelRanks(t, gs, func(r int, g *gpu.Comm) error {
		mod, err := g.Load("semantics.cu", semanticsSource())
		if err != nil {
			return err
		}
		defer mod.Close()
		f, err := mod.Function("mixed_signals")
		if err != nil {
			return err
		}
		out, err := g.Context().MemAlloc(64)
		if err != nil {
			return err
		}
		defer g.Context().MemFree(out)
		if err := g.Gin().Barrier(ctx); err != nil { // setup done on both ranks (one CUDA context)
			return err
		}
		runErrs[r] = g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: 1}, 0, g.DevComm(), out)
		res[r] = make([]byte, 32)
		if err := g.Context().CopyFromDevice(res[r], out); err != nil {
			return err
		}
		return g.Gin().Barrier(ctx) // no rank frees while the other's kernel runs
	})
	assert.ErrorIs(t, runErrs[0], gin.ErrMixedSignalOps)
	assert.NoError(t, runErrs[1])
	assert.Equal(t, uint64(1), le(res[0], 2), "rank 0's wait returned false (aborted)")
	assert.Equal(t, uint64(0), le(res[1], 2), "rank 1 got its SignalInc")
	assert.Equal(t, uint64(1), le(res[1], 3), "the refused SignalAdd did not land")
	fs := gs[0].Faults()
	require.Len(t, fs, 1)
	assert.ErrorIs(t, fs[0], gin.ErrMixedSignalOps)
	assert.Empty(t, gs[1].Faults())
}
