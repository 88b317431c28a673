package cuda

import "fmt"

// IPCGetHandle exports device memory from MemAlloc (its start address) to
// other processes of this host (cuIpcGetMemHandle).
func (c *Context) IPCGetHandle(p DevicePtr) (IPCHandle, error) {
	var h IPCHandle
	err := c.do(func() error { return check("cuIpcGetMemHandle", fnIpcGetMemHandle(&h, uint64(p))) })
	return h, err
}

// IPCOpen maps another process's exported memory into c and returns its
// address here (cuIpcOpenMemHandle_v2 with lazy peer access). A handle
// exported by this same process cannot be opened (the driver refuses it):
// use the exporter's pointer directly.
func (c *Context) IPCOpen(h IPCHandle) (DevicePtr, error) {
	var p uint64
	err := c.do(func() error {
		return check("cuIpcOpenMemHandle_v2", fnIpcOpenMemHandle(&p, h, ipcLazyEnablePeerAccess))
	})
	if err != nil {
		return 0, fmt.Errorf("open IPC handle on device %d: %w", c.dev.ordinal, err)
	}
	return DevicePtr(p), nil
}

// IPCClose unmaps memory from IPCOpen (cuIpcCloseMemHandle).
func (c *Context) IPCClose(p DevicePtr) error {
	return c.do(func() error { return check("cuIpcCloseMemHandle", fnIpcCloseMemHandle(uint64(p))) })
}
