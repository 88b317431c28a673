package conformance

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// childEnv marks a test binary re-executed by inSubprocess.
const childEnv = "RDMACTOR_CONFORMANCE_CHILD"

// inSubprocess runs fn in a re-executed test binary that runs only t, so a
// fault that kills the process (a wait reading unmapped memory, say) fails
// t with the child's output instead of taking the whole suite down. In the
// child it runs fn directly.
func inSubprocess(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	inSubprocessFor(t, 2*Timeout, fn)
}

// inSubprocessFor is inSubprocess with a budget of its own for the child.
func inSubprocessFor(t *testing.T, budget time.Duration, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		fn(t)
		return
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s in a child process: %v\n%s", t.Name(), err, excerpt(string(out)))
	}
	if !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s did not run in the child process:\n%s", t.Name(), tail(string(out), 60))
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// excerpt returns the part of a child's output that says why it died: from
// the first fatal error or panic (40 lines), else its last 60 lines.
func excerpt(s string) string {
	for _, mark := range []string{"fatal error:", "panic:", "unexpected fault", "--- FAIL"} {
		if i := strings.Index(s, mark); i >= 0 {
			lines := strings.SplitN(s[i:], "\n", 41)
			return strings.Join(lines[:min(len(lines), 40)], "\n")
		}
	}
	return tail(s, 60)
}
