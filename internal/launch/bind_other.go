//go:build !linux

package launch

import (
	"fmt"
	"os/exec"
	"runtime"
)

// affinity is unknown here: binding needs sched_setaffinity(2) (Linux).
func affinity() ([]int, error) {
	return nil, fmt.Errorf("launch: binding ranks to processors needs Linux, not %s: %w", runtime.GOOS, ErrBindUnsupported)
}

// startBound starts cmd; cpus must be empty (CoreBlocks fails here).
func startBound(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) > 0 {
		return fmt.Errorf("launch: bind to processors %v: %w", cpus, ErrBindUnsupported)
	}
	return cmd.Start()
}
