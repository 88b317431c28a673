package testutils

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/launch"
)

// RanksTimeout bounds a RunRanks job (less if the test's deadline is nearer).
const RanksTimeout = 2 * time.Minute

// RunRanks runs np ranks of the current test binary, each running role (see
// MainWithRoles), with env ("KEY=value") added, KillOnFailure set, and their
// output in the test log. It reports each failed rank with t.Errorf and
// returns the results indexed by rank.
func RunRanks(t testing.TB, np int, role string, env ...string) []launch.Result {
	t.Helper()
	res := RunRanksOpts(t, launch.Options{NP: np, Env: env, KillOnFailure: true}, role)
	for _, r := range res {
		if r.ExitCode != 0 {
			t.Errorf("rank %d of role %s: exit code %d: %v", r.Rank, role, r.ExitCode, r.Err)
		}
	}
	return res
}

// RunRanksOpts runs the ranks o describes with the current test binary as
// program, running role; o.Prog, o.Args, o.Stdout and o.Stderr are replaced
// (output goes to the test log, one t.Log per line). It logs Run's error and
// returns the results for the caller to check; it fails the test only when
// no rank could be started. The job ends at Deadline(t, RanksTimeout), or
// of o.Timeout where that is longer.
func RunRanksOpts(t testing.TB, o launch.Options, role string) []launch.Result {
	t.Helper()
	o.Prog = os.Args[0]
	// Should the binary not honor EnvRole, it runs no test rather than all.
	o.Args = []string{"-test.run=^$"}
	o.Env = append(append([]string(nil), o.Env...), EnvRole+"="+role, raceOptions())
	o.DumpOnTimeout = true // a rank that hangs shows its goroutines in the log
	w := &logWriter{t: t}
	o.Stdout, o.Stderr = w, w
	start := time.Now()
	res, err := launch.Run(Deadline(t, max(RanksTimeout, o.Timeout)), o)
	t.Logf("role %s: %d ranks ran for %v; err: %v", role, o.NP, time.Since(start).Round(time.Millisecond), err)
	if res == nil {
		t.Fatalf("role %s: %v", role, err)
	}
	return res
}

// raceOptions returns GORACE for the ranks: the caller's, plus a shorter
// sleep at exit (the race runtime's default atexit_sleep_ms=1000 would add a
// second to every rank). Without -race it does nothing.
func raceOptions() string {
	g := os.Getenv("GORACE")
	if !strings.Contains(g, "atexit_sleep_ms") {
		g = strings.TrimSpace(g + " atexit_sleep_ms=50")
	}
	return "GORACE=" + g
}

// logWriter sends each line written to it to t.Log.
type logWriter struct {
	mu sync.Mutex
	t  testing.TB
}

// Write logs each line of p; it never fails.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		w.t.Log(string(line))
	}
	return len(p), nil
}
