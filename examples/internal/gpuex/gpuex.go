// Package gpuex is what the GPU examples share: their command line, one
// rank per GPU as goroutines or launcher processes, and the launch of a
// kernel that reports a verdict.
package gpuex

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"log"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// Flags is a GPU example's job: -local, -path, -device and -timeout.
type Flags struct {
	Local   int           // ranks as goroutines of this process; 0: one rank of a launcher job
	Path    string        // gpu.ParsePath's "auto", "lsa" or "proxy"
	Device  int           // GPU ordinal of every rank of this process; -1: see DeviceConfig
	Timeout time.Duration // deadline of the whole run; kernels are aborted at it
}

// AddFlags registers Flags on flag.CommandLine; Main parses them.
func AddFlags() *Flags {
	f := &Flags{}
	flag.IntVar(&f.Local, "local", 0, "run this many ranks as goroutines of this process (one GPU each, round robin) instead of reading RDMACTOR_* from the launcher")
	flag.StringVar(&f.Path, "path", "auto", "GPU path: auto, lsa or proxy")
	flag.IntVar(&f.Device, "device", -1, "GPU ordinal of every rank of this process (-1: the rank's LSA index modulo the GPU count)")
	flag.DurationVar(&f.Timeout, "timeout", 60*time.Second, "deadline for the whole run; kernels are aborted at it")
	return f
}

// Main parses the command line (flag.Parse), runs fn as Run does, and
// exits with the ranks' errors, each naming its rank, if there are any.
func Main(f *Flags, fn func(ctx context.Context, c *gin.Comm, g *gpu.Comm) error) {
	flag.Parse()
	log.SetFlags(0)
	if err := Run(f, fn); err != nil {
		log.Fatal(err)
	}
}

// Run runs fn on every rank of the job f describes (gin.RunRanks), each
// with a gpu.Comm on its GPU (DeviceConfig). It closes the gpu.Comm and
// then the gin.Comm after fn, and returns the ranks' errors joined.
func Run(f *Flags, fn func(ctx context.Context, c *gin.Comm, g *gpu.Comm) error) error {
	path, err := gpu.ParsePath(f.Path)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.Timeout)
	defer cancel()
	noSignals := func(int) gin.Config { return gin.Config{} }
	return gin.RunRanks(ctx, f.Local, noSignals, func(ctx context.Context, c *gin.Comm) (err error) {
		cfg, err := DeviceConfig(path, f.Device, f.Local > 0, c.Rank())
		if err != nil {
			return err
		}
		g, err := gpu.New(ctx, c, cfg)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, g.Close()) }()
		return fn(ctx, c, g)
	})
}

// DeviceConfig is the gpu.Config of a rank on path: GPU device when
// device >= 0; else, for ranks that are goroutines of one process (local),
// GPU rank modulo the GPU count; else gpu.New's choice (the rank's LSA
// index modulo the count). It returns cuda's error where the local case
// cannot load the driver or count the GPUs.
func DeviceConfig(path gpu.Path, device int, local bool, rank int) (gpu.Config, error) {
	cfg := gpu.Config{Path: path}
	switch {
	case device >= 0:
		cfg.Device = &device
	case local:
		if err := cuda.Load(); err != nil {
			return cfg, err
		}
		n, err := cuda.DeviceCount()
		if err != nil {
			return cfg, err
		}
		dev := rank % max(n, 1)
		cfg.Device = &dev
	}
	return cfg, nil
}

// Verdict is what an example's kernel writes to its last argument, three
// little-endian uint64s: the kernel's own timing in ns, how many checks
// failed, and whether a wait was aborted (nonzero).
type Verdict struct {
	Elapsed time.Duration
	Wrong   uint64
	Aborted bool
}

// Launch compiles src (named file) for g's GPU, and runs its kernel name
// as one block of threads with args and a 24-byte Verdict buffer as the
// last argument. A barrier of c comes before the launch (module load and
// allocations synchronize the CUDA context, which ranks may share: no
// kernel may wait on a peer before every rank is done with them) and
// after it (no rank frees memory a partner still writes). It returns the
// first error of cuda, gpu or the barriers.
func Launch(ctx context.Context, c *gin.Comm, g *gpu.Comm, file, src, name string, threads int, args ...any) (v Verdict, err error) {
	mod, err := g.Load(file, src)
	if err != nil {
		return v, err
	}
	defer func() { err = errors.Join(err, mod.Close()) }()
	fn, err := mod.Function(name)
	if err != nil {
		return v, err
	}
	out, err := g.Context().MemAlloc(24)
	if err != nil {
		return v, err
	}
	defer func() { err = errors.Join(err, g.Context().MemFree(out)) }()
	if err := c.Barrier(ctx); err != nil {
		return v, err
	}
	if err := g.Run(ctx, fn, cuda.Dim3{X: 1}, cuda.Dim3{X: threads}, 0, append(args, out)...); err != nil {
		return v, err
	}
	res := make([]byte, 24)
	if err := g.Context().CopyFromDevice(res, out); err != nil {
		return v, err
	}
	v = Verdict{
		Elapsed: time.Duration(binary.LittleEndian.Uint64(res)),
		Wrong:   binary.LittleEndian.Uint64(res[8:]),
		Aborted: binary.LittleEndian.Uint64(res[16:]) != 0,
	}
	return v, c.Barrier(ctx)
}
