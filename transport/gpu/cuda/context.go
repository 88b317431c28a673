package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// Context is a device's primary context (cuDevicePrimaryCtxRetain): the one
// context per device and process that the CUDA runtime and PyTorch use too,
// so memory and modules are shared with them. Every method makes it current
// on a locked OS thread for the call (package doc, caller duty 2).
//
// A Context is safe for concurrent use.
type Context struct {
	dev Device
	h   uintptr // CUcontext

	mu     sync.Mutex
	closed bool
}

// ErrClosed is returned by calls on a closed Context, and on what it made
// after it was closed.
var ErrClosed = errors.New("cuda: context closed")

// PrimaryContext retains d's primary context. Close releases it.
func (d Device) PrimaryContext() (*Context, error) {
	if err := loaded(); err != nil {
		return nil, err
	}
	var h uintptr
	if err := check("cuDevicePrimaryCtxRetain", fnDevicePrimaryCtxRetain(&h, d.h)); err != nil {
		return nil, fmt.Errorf("device %d: %w", d.ordinal, err)
	}
	return &Context{dev: d, h: h}, nil
}

// Device is the context's device.
func (c *Context) Device() Device { return c.dev }

// do runs f with the context current on a locked OS thread.
func (c *Context) do(f func() error) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := check("cuCtxSetCurrent", fnCtxSetCurrent(c.h)); err != nil {
		return err
	}
	return f()
}

// Synchronize waits for all work of the context (cuCtxSynchronize).
func (c *Context) Synchronize() error {
	return c.do(func() error { return check("cuCtxSynchronize", fnCtxSynchronize()) })
}

// EnablePeerAccess lets kernels of c load and store peer's memory by its
// device pointers (cuCtxEnablePeerAccess). Enabling twice is not an error.
// Across GPUs without a peer path it returns an *Error matching
// rdma.ErrNotSupported.
func (c *Context) EnablePeerAccess(peer *Context) error {
	if peer.dev.h == c.dev.h {
		return nil
	}
	return c.do(func() error {
		r := fnCtxEnablePeerAccess(peer.h, 0)
		if r == errPeerAlreadyEnabled {
			return nil
		}
		if err := check("cuCtxEnablePeerAccess", r); err != nil {
			return fmt.Errorf("enable access from device %d to device %d: %w", c.dev.ordinal, peer.dev.ordinal, err)
		}
		return nil
	})
}

// Close releases the primary context. Calls on it afterwards return
// ErrClosed.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return check("cuDevicePrimaryCtxRelease_v2", fnDevicePrimaryCtxRel(c.dev.h))
}
