// Command gpu_barrier runs a BarrierSession (rdmactor/gin.cuh, the device
// twin of ncclGinBarrierSession) across ranks from inside CUDA kernels:
// each round stamps a value into the right neighbour's window, syncs,
// checks the stamp from the left neighbour, syncs again; it prints the
// time per barrier.
//
//	bin/gpu_barrier -local 2 -path lsa           # 2 GPUs, one process
//	bin/rdmarun -np 2 bin/gpu_barrier -path proxy -device 0 # 2 processes on GPU 0, proxy path
package main

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

//go:embed barrier.cu
var kernel string

func main() {
	local := flag.Int("local", 0, "run this many ranks as goroutines of this process (one GPU each, round robin)")
	pathFlag := flag.String("path", "auto", "GPU path: auto, lsa or proxy")
	device := flag.Int("device", -1, "GPU ordinal of every rank of this process (-1: the rank's LSA index modulo the GPU count)")
	rounds := flag.Int("rounds", 1000, "barrier rounds (two barriers each)")
	timeout := flag.Duration("timeout", 60*time.Second, "deadline; kernels are aborted at it")
	flag.Parse()
	log.SetFlags(0)
	path, err := gpu.ParsePath(*pathFlag)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *local > 0 {
		if err := cuda.Load(); err != nil {
			log.Fatal(err)
		}
		n, err := cuda.DeviceCount()
		if err != nil {
			log.Fatal(err)
		}
		comms, err := gin.NewLocal(ctx, *local, gin.Config{})
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
				errs[r] = run(ctx, c, gpu.Config{Path: path, Device: &dev}, *rounds)
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
	if err := run(ctx, c, cfgFor(path, *device), *rounds); err != nil {
		log.Fatalf("rank %d: %v", c.Rank(), err)
	}
}

func run(ctx context.Context, c *gin.Comm, cfg gpu.Config, rounds int) (err error) {
	defer func() { err = errors.Join(err, c.Close()) }()
	g, err := gpu.New(ctx, c, cfg)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, g.Close()) }()
	win, err := g.RegisterWindow(ctx, 64)
	if err != nil {
		return err
	}
	mod, err := g.Load("barrier.cu", kernel)
	if err != nil {
		return err
	}
	defer mod.Close()
	f, err := mod.Function("barrier_rounds")
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
	if err := g.Run(ctx, f, cuda.Dim3{X: 1}, cuda.Dim3{X: 128}, 0, g.DevComm(), win.Handle(), int32(rounds), out); err != nil {
		return err
	}
	res := make([]byte, 24)
	if err := g.Context().CopyFromDevice(res, out); err != nil {
		return err
	}
	ns, wrong, aborted := binary.LittleEndian.Uint64(res), binary.LittleEndian.Uint64(res[8:]), binary.LittleEndian.Uint64(res[16:])
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if aborted != 0 || wrong != 0 {
		return fmt.Errorf("aborted %d, %d wrong stamps", aborted, wrong)
	}
	per := time.Duration(ns / uint64(2*rounds))
	fmt.Printf("rank %d/%d: %s path, GPU %d: %d barriers from the kernel, stamps verified; %v per barrier\n",
		c.Rank(), c.Size(), g.Path(), g.Device().Ordinal(), 2*rounds, per)
	return nil
}

// cfgFor is the GPU config of a launcher rank: device < 0 leaves the
// choice to gpu.New.
func cfgFor(path gpu.Path, device int) gpu.Config {
	cfg := gpu.Config{Path: path}
	if device >= 0 {
		cfg.Device = &device
	}
	return cfg
}
