package gpumoe

import (
	_ "embed"
	"fmt"
	"os"

	"github.com/rdmactor/rdmactor/transport/gpu"
	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// kernelSource is kernels.cu: every kernel of the package, compiled once
// per device by NVRTC (through gpu.Compile's cache) with gin.cuh on the
// include path.
//
//go:embed kernels.cu
var kernelSource string

const kernelName = "moe_kernels.cu"

// compileOptions are the NVRTC options of kernels.cu: the size of Args
// and the trace's slot count, which kernels.cu checks against its own
// (static_asserts), and the bounds of Config its shared arrays are sized
// by; with RDMACTOR_MOE_TRACE set in the environment, the low-latency
// kernels also record the %globaltimer trace that Handle.TraceLL reads (a
// few atomics per block; the jit cache keys on the options).
func compileOptions() []string {
	o := []string{fmt.Sprintf("-DMOE_ARGS_WORDS=%d", argWords),
		fmt.Sprintf("-DMOE_MAX_RANKS=%d", maxRanks), fmt.Sprintf("-DMOE_MAX_TOPK=%d", maxTopK),
		fmt.Sprintf("-DMOE_TRACE_SLOTS=%d", llTraceSlots)}
	if os.Getenv("RDMACTOR_MOE_TRACE") != "" {
		o = append(o, "-DMOE_TRACE")
	}
	return o
}

// kernel names, as kernels.cu exports them.
const (
	kLayout     = "moe_layout"
	kDispatch   = "moe_dispatch"
	kCombine    = "moe_combine"
	kLLDispatch = "moe_ll_dispatch"
	kLLCombine  = "moe_ll_combine"
	kExpert     = "moe_expert_normal"
	kExpertLL   = "moe_expert_ll"
	kSync       = "moe_sync"
	kTraceDump  = "moe_trace_dump"
)

var kernelNames = []string{kLayout, kDispatch, kCombine, kLLDispatch, kLLCombine, kExpert, kExpertLL, kSync, kTraceDump}

// kernels are the loaded functions of one device.
type kernels struct {
	mod *cuda.Module
	fn  map[string]*cuda.Function
}

func loadKernels(g *gpu.Comm) (*kernels, error) {
	mod, err := g.Load(kernelName, kernelSource, compileOptions()...)
	if err != nil {
		return nil, fmt.Errorf("moe kernels: %w", err)
	}
	k := &kernels{mod: mod, fn: map[string]*cuda.Function{}}
	for _, name := range kernelNames {
		f, err := mod.Function(name)
		if err != nil {
			mod.Close()
			return nil, fmt.Errorf("moe kernels: %w", err)
		}
		k.fn[name] = f
	}
	return k, nil
}

func (k *kernels) close() error { return k.mod.Close() }
