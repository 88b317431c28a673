package affinity

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setSize is the processors a unix.CPUSet holds (glibc's CPU_SETSIZE).
const setSize = 1024

// Get is the processors the calling thread may run on, ascending (a
// process's threads share it unless one was set apart).
func Get() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := range setSize {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Set confines thread tid (0: the calling thread) to cpus.
func Set(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(tid, &set); err != nil {
		return fmt.Errorf("sched_setaffinity to processors %v: %w", cpus, err)
	}
	return nil
}
