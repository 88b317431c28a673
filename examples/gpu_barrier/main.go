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
	"flag"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/examples/internal/gpuex"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
)

//go:embed barrier.cu
var kernel string

func main() {
	job := gpuex.AddFlags()
	rounds := flag.Int("rounds", 1000, "barrier rounds (two barriers each)")
	gpuex.Main(job, func(ctx context.Context, c *gin.Comm, g *gpu.Comm) error { return run(ctx, c, g, *rounds) })
}

// run is one rank: window, kernel, verdict.
func run(ctx context.Context, c *gin.Comm, g *gpu.Comm, rounds int) error {
	win, err := g.RegisterWindow(ctx, 64)
	if err != nil {
		return err
	}
	v, err := gpuex.Launch(ctx, c, g, "barrier.cu", kernel, "barrier_rounds", 128, g.DevComm(), win.Handle(), int32(rounds))
	if err != nil {
		return err
	}
	if v.Aborted || v.Wrong != 0 {
		return fmt.Errorf("aborted %t, %d wrong stamps", v.Aborted, v.Wrong)
	}
	per := v.Elapsed / time.Duration(2*rounds)
	fmt.Printf("rank %d/%d: %s path, GPU %d: %d barriers from the kernel, stamps verified; %v per barrier\n",
		c.Rank(), c.Size(), g.Path(), g.Device().Ordinal(), 2*rounds, per)
	return nil
}
