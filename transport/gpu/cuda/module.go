package cuda

import (
	"fmt"
)

// Module is loaded GPU code (cuModuleLoadData) in one context.
type Module struct {
	c *Context
	h uintptr
}

// LoadModule loads a cubin (from Compile or package jit) into c.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: load module: empty image")
	}
	m := &Module{c: c}
	err := c.do(func() error {
		return check("cuModuleLoadData", fnModuleLoadData(&m.h, bytesPtr(image)))
	})
	keepAlive([]any{image})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Function is a kernel of a module.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Function looks up kernel name (declared extern "C", so not mangled).
func (m *Module) Function(name string) (*Function, error) {
	f := &Function{m: m, name: name}
	err := m.c.do(func() error { return check("cuModuleGetFunction", fnModuleGetFunction(&f.h, m.h, name)) })
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", name, err)
	}
	return f, nil
}

// Close unloads the module (cuModuleUnload).
func (m *Module) Close() error {
	return m.c.do(func() error { return check("cuModuleUnload", fnModuleUnload(m.h)) })
}

// Name is the kernel's name.
func (f *Function) Name() string { return f.name }

// Dim3 is a grid or block shape; zero fields count as 1.
type Dim3 struct{ X, Y, Z int }

func (d Dim3) dims() (uint32, uint32, uint32) {
	one := func(v int) uint32 {
		if v <= 0 {
			return 1
		}
		return uint32(v)
	}
	return one(d.X), one(d.Y), one(d.Z)
}

// Launch queues the kernel on s with grid × block threads, sharedBytes of
// dynamic shared memory and args (package doc, caller duty 3 lists the
// types) (cuLaunchKernel). It returns once the launch is queued.
func (f *Function) Launch(grid, block Dim3, sharedBytes int, s *Stream, args ...any) error {
	params, keep, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.name, err)
	}
	gx, gy, gz := grid.dims()
	bx, by, bz := block.dims()
	err = s.c.do(func() error {
		return check("cuLaunchKernel", fnLaunchKernel(f.h, gx, gy, gz, bx, by, bz, uint32(sharedBytes), s.h, params, nil))
	})
	keepAlive(keep)
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.name, err)
	}
	return nil
}

// LaunchOverlapped is Launch with programmatic dependent launch allowed
// (cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
// CUDA 12.0, sm_90 and later; elsewhere the driver runs it as Launch): the
// kernel's blocks may start before the work queued ahead of it on s
// finished, once every block of the kernel ahead executed
// griddepcontrol.launch_dependents or exited. So the kernel must execute
// griddepcontrol.wait (cudaGridDependencySynchronize) before it touches
// memory that earlier work writes or reads; what it does before (loading
// descriptors that no kernel writes) overlaps the kernel ahead's tail and
// this launch's own latency.
func (f *Function) LaunchOverlapped(grid, block Dim3, sharedBytes int, s *Stream, args ...any) error {
	params, keep, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.name, err)
	}
	attr := &launchAttribute{id: launchAttrProgrammaticStreamSerialization}
	attr.val[0] = 1 // programmaticStreamSerializationAllowed
	cfg := &launchConfig{shared: uint32(sharedBytes), stream: s.h, attrs: attr, numAttrs: 1}
	cfg.gridX, cfg.gridY, cfg.gridZ = grid.dims()
	cfg.blockX, cfg.blockY, cfg.blockZ = block.dims()
	err = s.c.do(func() error {
		return check("cuLaunchKernelEx", fnLaunchKernelEx(cfg, f.h, params, nil))
	})
	keepAlive(append(keep, cfg, attr))
	if err != nil {
		return fmt.Errorf("launch %s: %w", f.name, err)
	}
	return nil
}

// launchConfig is a CUlaunchConfig (cuda.h, CUDA 13.0): 56 bytes.
type launchConfig struct {
	gridX, gridY, gridZ    uint32
	blockX, blockY, blockZ uint32
	shared                 uint32
	_                      uint32
	stream                 uintptr
	attrs                  *launchAttribute
	numAttrs               uint32
	_                      uint32
}

// launchAttribute is a CUlaunchAttribute: the id, padding to 8 bytes and
// the 64-byte CUlaunchAttributeValue union.
type launchAttribute struct {
	id  uint32
	_   uint32
	val [64]byte
}

// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (CUlaunchAttributeID).
const launchAttrProgrammaticStreamSerialization = 6
