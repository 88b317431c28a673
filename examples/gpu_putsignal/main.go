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
	"flag"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/examples/internal/gpuex"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/transport/gpu"
)

//go:embed pingpong.cu
var kernel string

func main() {
	job := gpuex.AddFlags()
	iters := flag.Int("iters", 1000, "round trips")
	size := flag.Int("bytes", 8, "bytes per message")
	gpuex.Main(job, func(ctx context.Context, c *gin.Comm, g *gpu.Comm) error { return run(ctx, c, g, *iters, *size) })
}

// run is one rank: window, kernel, verdict.
func run(ctx context.Context, c *gin.Comm, g *gpu.Comm, iters, size int) error {
	if c.Size()%2 != 0 {
		return fmt.Errorf("world size %d: ranks pair up, want an even size", c.Size())
	}
	win, err := g.RegisterWindow(ctx, 2*size)
	if err != nil {
		return err
	}
	v, err := gpuex.Launch(ctx, c, g, "pingpong.cu", kernel, "pingpong", 256, g.DevComm(), win.Handle(), int32(iters), uint64(size))
	if err != nil {
		return err
	}
	switch {
	case v.Aborted:
		return fmt.Errorf("kernel aborted")
	case v.Wrong != 0:
		return fmt.Errorf("%d bytes arrived wrong", v.Wrong)
	}
	name, _ := g.Device().Name()
	rt := v.Elapsed / time.Duration(iters)
	fmt.Printf("rank %d/%d: %s path, GPU %d (%s): %d round trips of %d B with put+SignalInc from the kernel, verified; round trip %v (one way %v)\n",
		c.Rank(), c.Size(), g.Path(), g.Device().Ordinal(), name, iters, size, rt, rt/2)
	return nil
}
