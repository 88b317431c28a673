package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/rdmactor/rdmactor/transport/gpu/include"
	"github.com/rdmactor/rdmactor/transport/gpu/jit"
)

// Compile compiles a CUDA C++ source for dev with NVRTC, with
// "rdmactor/gin.cuh" on its include path, through the cubin cache of
// package jit. extra are further NVRTC options ("-DN=4").
func Compile(dev cuda.Device, name, code string, extra ...string) ([]byte, error) {
	arch, err := dev.Arch()
	if err != nil {
		return nil, err
	}
	return jit.Compile(cuda.Source{Name: name, Code: code, Headers: include.Headers()}, arch, extra...)
}

// Load compiles code (see Compile) for this rank's GPU and loads it.
func (g *Comm) Load(name, code string, extra ...string) (*cuda.Module, error) {
	cubin, err := Compile(g.dev, name, code, extra...)
	if err != nil {
		return nil, err
	}
	return g.ctx.LoadModule(cubin)
}

// Launch queues f on the Comm's stream. Pass DevComm() and Window
// handles as arguments where the kernel takes them.
func (g *Comm) Launch(f *cuda.Function, grid, block cuda.Dim3, sharedBytes int, args ...any) error {
	if g.closed.Load() {
		return ErrClosed
	}
	return f.Launch(grid, block, sharedBytes, g.stream, args...)
}

// LaunchOverlapped queues f on the Comm's stream with programmatic
// dependent launch allowed (cuda.Function.LaunchOverlapped): f's blocks may
// start while the kernel ahead of it still runs, so f must execute
// griddepcontrol.wait before it touches memory that earlier work on the
// stream writes or reads (gin.cuh: rdmactor::waitPrior; NCCL's device
// kernels and CUTLASS use the same attribute).
func (g *Comm) LaunchOverlapped(f *cuda.Function, grid, block cuda.Dim3, sharedBytes int, args ...any) error {
	if g.closed.Load() {
		return ErrClosed
	}
	return f.LaunchOverlapped(grid, block, sharedBytes, g.stream, args...)
}

// waitIdle paces Wait: no spinning (a kernel runs for a while), sleeps from
// 5 µs to 1 ms.
var waitIdle = idle.Strategy{Spins: 0, Yields: 16, MinSleep: 5 * time.Microsecond, MaxSleep: time.Millisecond}

// Wait waits until every kernel queued on the Comm's stream returned. When
// ctx ends first, it sets the abort flag (every wait of the kernels
// returns false), gives the kernels Config.AbortGrace to return, and
// returns an error wrapping ErrAborted and ctx's error. A kernel fault is
// the driver's *cuda.Error; a proxy failure is the *ProxyError, a lost
// peer gin's error (Err). The abort flag stays set (ClearAbort).
func (g *Comm) Wait(ctx context.Context) error {
	b := idle.New(waitIdle)
	var aborted time.Time
	for {
		done, err := g.stream.Query()
		if err != nil {
			return fmt.Errorf("kernel on device %d: %w", g.dev.Ordinal(), err)
		}
		if done {
			var errs []error
			if !aborted.IsZero() {
				errs = append(errs, fmt.Errorf("%w: %w", ErrAborted, context.Cause(ctx)))
			}
			if e := g.Err(); e != nil {
				errs = append(errs, e)
			}
			return errors.Join(errs...)
		}
		if aborted.IsZero() && (ctx.Err() != nil || g.Err() != nil) {
			g.Abort()
			aborted = time.Now()
		}
		if !aborted.IsZero() && time.Since(aborted) > g.cfg.AbortGrace {
			return fmt.Errorf("kernel still running %v after abort (does it check the results of waits?): %w",
				g.cfg.AbortGrace, ErrAborted)
		}
		b.Idle()
	}
}

// Run launches f and waits for it (Launch, then Wait).
func (g *Comm) Run(ctx context.Context, f *cuda.Function, grid, block cuda.Dim3, sharedBytes int, args ...any) error {
	if err := g.Launch(f, grid, block, sharedBytes, args...); err != nil {
		return err
	}
	return g.Wait(ctx)
}
