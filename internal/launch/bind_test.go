package launch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmactor/rdmactor/internal/launch"
)

func TestCoreBlocks(t *testing.T) {
	one, err := launch.CoreBlocks(1)
	if errors.Is(err, launch.ErrBindUnsupported) {
		t.Skip(err)
	}
	if err != nil || len(one) != 1 || len(one[0]) != runtime.NumCPU() {
		t.Fatalf("CoreBlocks(1) = %v, %v: want one block of all %d processors", one, err, runtime.NumCPU())
	}
	n := runtime.NumCPU()
	blocks, err := launch.CoreBlocks(n)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i, b := range blocks {
		if len(b) != 1 || seen[b[0]] {
			t.Errorf("block %d of %d: %v, want one processor of its own", i, n, b)
		}
		seen[b[0]] = true
	}
	if _, err := launch.CoreBlocks(n + 1); err == nil || !strings.Contains(err.Error(), "no core of its own") {
		t.Errorf("CoreBlocks(%d) on %d processors: %v, want an error", n+1, n, err)
	}
}

// TestBoundRanks: each rank runs on the processors Options.CPUs gives it,
// and the launcher's own affinity is as before.
func TestBoundRanks(t *testing.T) {
	blocks, err := launch.CoreBlocks(min(2, runtime.NumCPU()))
	if err != nil {
		t.Skip(err)
	}
	var out bytes.Buffer
	o := sh(len(blocks), `grep Cpus_allowed_list /proc/self/status | cut -f2`)
	o.Stdout, o.CPUs = &out, blocks
	if _, err := launch.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	var want []string
	for r, b := range blocks {
		want = append(want, fmt.Sprintf("[%d] %s", r, cpuList(b)))
	}
	if got := sortedLines(out.String()); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ranks' processors %q, want %q", got, want)
	}
	if after, _ := launch.CoreBlocks(1); len(after[0]) != runtime.NumCPU() {
		t.Errorf("the launcher runs on %v after the start, want all %d processors", after[0], runtime.NumCPU())
	}

	o.CPUs = blocks[:1]
	if _, err := launch.Run(context.Background(), o); len(blocks) > 1 && err == nil {
		t.Error("Run with CPUs for fewer ranks than NP: no error")
	}
}

// cpuList writes processors as /proc's Cpus_allowed_list does: ranges a-b.
func cpuList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
