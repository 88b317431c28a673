//go:build linux

package perf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/rdmactor/rdmactor/internal/affinity"
)

// BindCPU pins every thread of this process (and so the threads it makes
// later, which inherit the mask) to the i-th CPU it may run on, modulo
// their number, as mpirun --bind-to core does: two ranks that spin while
// they wait must not share a core, or the waiter spins while the rank it
// waits for cannot run. It returns the CPU chosen.
func BindCPU(i int) (int, error) {
	cpus, err := affinity.Get()
	if err != nil {
		return 0, fmt.Errorf("bind: %w", err)
	}
	if len(cpus) == 0 {
		return 0, fmt.Errorf("bind: no CPU allowed")
	}
	cpu := cpus[i%len(cpus)]
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("bind: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := affinity.Set(tid, []int{cpu}); err != nil {
			return 0, fmt.Errorf("bind thread %d: %w", tid, err)
		}
	}
	return cpu, nil
}

// onlineCPUs is the host's processors online (/sys/devices/system/cpu/online,
// ranges such as 0-3,8-11); runtime.NumCPU where that cannot be read.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, found := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		z, err2 := a, error(nil)
		if found {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return runtime.NumCPU()
		}
		n += z - a + 1
	}
	return n
}
