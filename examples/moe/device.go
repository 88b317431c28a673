package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// gpuRunner is the GPU build of this example (examples/moe_gpu): the same
// flags and output, with dispatch and combine done by CUDA kernels on the
// device-side gin API (package moe/gpu). It is a separate binary so this
// one keeps no GPU code; -device gpu hands the run over to it.
const gpuRunner = "moe_gpu"

// deviceArg removes -device VALUE (or -device=VALUE) from args and returns
// the value ("cpu" when absent) and the other arguments.
func deviceArg(args []string) (string, []string, error) {
	device, rest := "cpu", make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "device" {
			rest = append(rest, a)
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return "", nil, fmt.Errorf("flag -device needs a value: cpu or gpu")
			}
			i++
			val = args[i]
		}
		device = val
	}
	if device != "cpu" && device != "gpu" {
		return "", nil, fmt.Errorf("-device %q: want cpu or gpu", device)
	}
	return device, rest, nil
}

// execGPU replaces this process with the GPU runner found beside this
// executable (go build -o bin/ ./examples/moe ./examples/moe_gpu), keeping
// the environment the launcher set (RDMACTOR_*).
func execGPU(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-device gpu: find this executable: %w", err)
	}
	path := filepath.Join(filepath.Dir(self), gpuRunner)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("-device gpu: the GPU runner %s is missing: build it beside this binary with go build -o %s/ ./examples/moe_gpu", path, filepath.Dir(self))
	}
	return syscall.Exec(path, append([]string{path}, args...), os.Environ())
}
