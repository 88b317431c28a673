//go:build linux

package perf

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// BindCPU pins every thread of this process (and so the threads it makes
// later, which inherit the mask) to the i-th CPU it may run on, modulo
// their number, as mpirun --bind-to core does: two ranks that spin while
// they wait must not share a core, or the waiter spins while the rank it
// waits for cannot run. It returns the CPU chosen.
func BindCPU(i int) (int, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return 0, fmt.Errorf("bind: %w", err)
	}
	var cpus []int
	for c := range 1024 {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return 0, fmt.Errorf("bind: no CPU allowed")
	}
	cpu := cpus[i%len(cpus)]
	var set unix.CPUSet
	set.Set(cpu)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("bind: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return 0, fmt.Errorf("bind thread %d to CPU %d: %w", tid, cpu, err)
		}
	}
	return cpu, nil
}
