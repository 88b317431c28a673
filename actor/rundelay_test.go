package actor_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// threadRunDelays reads, for each thread of this process, the time it has
// spent runnable but waiting for a processor (run_delay, the second field
// of /proc/self/task/TID/schedstat; Linux's sched-stats.rst). Go's
// /sched/latencies misses that wait when the kernel preempts the thread
// of a running goroutine. Nil where /proc does not say.
func threadRunDelays() map[string]time.Duration {
	paths, _ := filepath.Glob("/proc/self/task/*/schedstat")
	d := make(map[string]time.Duration, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			d[p] = time.Duration(ns)
		}
	}
	return d
}

// worstRunDelaySince is the longest any thread waited for a processor
// since before (a thread born since counts from 0).
func worstRunDelaySince(before map[string]time.Duration) time.Duration {
	var worst time.Duration
	for p, now := range threadRunDelays() {
		worst = max(worst, now-before[p])
	}
	return worst
}
