//go:build !linux

package gin

// cpuSet is unknown off Linux: hostCPUs then counts runtime.NumCPU.
func cpuSet() []byte { return nil }
