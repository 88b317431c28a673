package launch

import (
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// cpuSetSize is the processors a unix.CPUSet holds (glibc's CPU_SETSIZE).
const cpuSetSize = 1024

// affinity is this thread's CPU affinity (sched_getaffinity(2)), ascending.
func affinity() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("launch: sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range cpuSetSize {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
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
	var set, old unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("sched_getaffinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("bind to processors %v: sched_setaffinity: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		err = fmt.Errorf("restore the launcher's affinity after starting a rank: %w", rerr)
	}
	return err
}
