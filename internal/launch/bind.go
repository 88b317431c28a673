package launch

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/rdmactor/rdmactor/internal/affinity"
)

// CoreBlocks divides the processors this process may run on (its CPU
// affinity, in ascending order) among np ranks in contiguous blocks of
// equal size, as mpirun --bind-to core and Slurm's task/affinity give each
// task cores of its own: rank i gets block i; processors left over by the
// division stay unused. It fails when there are fewer processors than
// ranks (a block would be empty: run without binding) and where the OS
// offers no affinity (ErrBindUnsupported).
//
// Why bind: a rank's receive loop spins while traffic recurs, and on a
// host whose ranks take every processor an unbound rank's other threads
// (the one the timer wakes to send, the actor the loop hands a message
// to) land on the core where the peer's loop spins and hold it off
// (docs/tuning.md).
func CoreBlocks(np int) ([][]int, error) {
	cpus, err := affinity.Get()
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if np < 1 || np > len(cpus) {
		return nil, fmt.Errorf("launch: %d ranks on %d processors: no core of its own for each", np, len(cpus))
	}
	k := len(cpus) / np
	blocks := make([][]int, np)
	for i := range blocks {
		blocks[i] = cpus[i*k : (i+1)*k : (i+1)*k]
	}
	return blocks, nil
}

// startBound starts cmd bound to cpus (none: as this process): the child
// inherits the affinity of the thread that forks it, so the start runs on
// a locked thread whose affinity is set for the fork and restored after,
// and the rank's Go runtime sizes GOMAXPROCS from it at its first
// instruction, as under taskset(1).
func startBound(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := affinity.Get()
	if err != nil {
		return err
	}
	if err := affinity.Set(0, cpus); err != nil {
		return fmt.Errorf("bind a rank: %w", err)
	}
	err = cmd.Start()
	if rerr := affinity.Set(0, old); rerr != nil && err == nil {
		err = fmt.Errorf("restore the launcher's affinity after starting a rank: %w", rerr)
	}
	return err
}
