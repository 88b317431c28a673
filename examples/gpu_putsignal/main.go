// Command gpu_putsignal is rdmactor's GPU example: CUDA kernels on two
// ranks play ping-pong with put + SignalInc from inside the kernel
// (rdmactor/gin.cuh, the device twin of ncclGin), each checking every byte
// its partner sent, and print the round-trip time.
//
// Two GPUs, ranks as goroutines of one process, LSA path (NVLink):
//
//	go build -o bin/ ./examples/gpu_putsignal
//	bin/gpu_putsignal -local 2 -path lsa
//
// Two processes on one GPU through the proxy path (the CPU proxy of each
// rank posts the kernel's WQEs over shm; the GPU time-slices the two
// processes' kernels, so a round trip takes milliseconds there, against
// microseconds with one process per GPU):
//
//	bin/rdmarun -np 2 bin/gpu_putsignal -path proxy -device 0
//
// Ranks pair up as (0,1), (2,3), ...; the world size must be even.
package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

//go:embed pingpong.cu
var kernel string

func main() {
	local := flag.Int("local", 0, "run this many ranks as goroutines of this process (one GPU each, round robin) instead of reading RDMACTOR_* from the launcher")
	pathFlag := flag.String("path", "auto", "GPU path: auto, lsa or proxy")
	device := flag.Int("device", -1, "GPU ordinal of every rank of this process (-1: the rank's LSA index modulo the GPU count)")
	iters := flag.Int("iters", 1000, "round trips")
	size := flag.Int("bytes", 8, "bytes per message")
	timeout := flag.Duration("timeout", 60*time.Second, "deadline for the whole run; kernels are aborted at it")
	flag.Parse()
	path, err := gpu.ParsePath(*pathFlag)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	if *local > 0 {
		comms, err := gin.NewLocal(ctx, *local, gin.Config{})
		if err != nil {
			log.Fatal(err)
		}
		n, err := gpuCount()
		if err != nil {
			log.Fatal(err)
		}
		errs := make([]error, len(comms))
		var wg sync.WaitGroup
		for r, c := range comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				dev := r % n
				if *device >= 0 {
					dev = *device
				}
				errs[r] = run(ctx, c, gpu.Config{Path: path, Device: &dev}, *iters, *size)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			log.Fatal(err)
		}
		return
	}
	c, err := gin.Init(ctx, gin.Config{})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, c, cfgFor(path, *device), *iters, *size); err != nil {
		log.Fatalf("rank %d: %v", c.Rank(), err)
	}
}

func gpuCount() (int, error) {
	if err := cuda.Load(); err != nil {
		return 0, err
	}
	return cuda.DeviceCount()
}

// run is one rank: GPU side, window, kernel, verdict.
func run(ctx context.Context, c *gin.Comm, cfg gpu.Config, iters, size int) (err error) {
	defer func() { err = errors.Join(err, c.Close()) }()
	if c.Size()%2 != 0 {
		return fmt.Errorf("world size %d: ranks pair up, want an even size", c.Size())
	}
	g, err := gpu.New(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	win, err := g.RegisterWindow(ctx, 2*size)
	if err != nil {
		return err
	}
	mod, err := g.Load("pingpong.cu", kernel)
	if err != nil {
		return err
	}
	defer mod.Close()
	f, err := mod.Function("pingpong")
	if err != nil {
		return err
	}
	out, err := g.Context().MemAlloc(32)
	if err != nil {
		return err
	}
	defer g.Context().MemFree(out)
	// Setup (module load, allocations) synchronizes the CUDA context: finish
	// it on every rank before any kernel waits on a peer (ranks may share a
	// GPU and its context).
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if err := g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: 256}, 0, g.DevComm(), win.Handle(), int32(iters), uint64(size), out); err != nil {
		return err
	}
	res := make([]byte, 24)
	if err := g.Context().CopyFromDevice(res, out); err != nil {
		return err
	}
	ns, wrong, aborted := binary.LittleEndian.Uint64(res), binary.LittleEndian.Uint64(res[8:]), binary.LittleEndian.Uint64(res[16:])
	name, _ := g.Device().Name()
	if err := c.Barrier(ctx); err != nil { // nobody frees memory a partner still writes
		return err
	}
	switch {
	case aborted != 0:
		return fmt.Errorf("kernel aborted")
	case wrong != 0:
		return fmt.Errorf("%d bytes arrived wrong", wrong)
	}
	rt := time.Duration(ns / uint64(iters))
	fmt.Printf("rank %d/%d: %s path, GPU %d (%s): %d round trips of %d B with put+SignalInc from the kernel, verified; round trip %v (one way %v)\n",
		c.Rank(), c.Size(), g.Path(), g.Device().Ordinal(), name, iters, size, rt, rt/2)
	return nil
}

func init() { log.SetFlags(0); log.SetOutput(os.Stderr) }

// cfgFor is the GPU config of a launcher rank: device < 0 leaves the
// choice to gpu.New.
func cfgFor(path gpu.Path, device int) gpu.Config {
	cfg := gpu.Config{Path: path}
	if device >= 0 {
		cfg.Device = &device
	}
	return cfg
}
