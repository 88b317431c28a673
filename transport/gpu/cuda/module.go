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
