//go:build !linux

package perf

import (
	"errors"
	"runtime"
)

// BindCPU is not supported outside Linux: ranks run unbound.
func BindCPU(i int) (int, error) {
	return 0, errors.New("bind: CPU affinity is supported on Linux only")
}

// onlineCPUs is runtime.NumCPU here: no launcher binding to tell apart.
func onlineCPUs() int { return runtime.NumCPU() }
