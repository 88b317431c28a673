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
// the first fatal error or panic (40 lines); for a failed test, from the
// start of the innermost test that failed first, whose log lines (printed
// as they come under -test.v) precede its "--- FAIL" line; else its last
// 60 lines.
func excerpt(s string) string {
	from := -1
	for _, mark := range []string{"fatal error:", "panic:", "unexpected fault"} {
		if i := strings.Index(s, mark); i >= 0 && (from < 0 || i < from) {
			from = i
		}
	}
	if from < 0 {
		from = failedRun(s)
	}
	if from < 0 {
		return tail(s, 60)
	}
	lines := strings.SplitN(s[from:], "\n", 41)
	return strings.Join(lines[:min(len(lines), 40)], "\n")
}

// failedRun is the offset in s of the "=== RUN" line of the innermost
// test that failed (the deepest "--- FAIL" name, the first of those), or
// -1: a parent's "--- FAIL" line may come before its subtests'.
func failedRun(s string) int {
	const mark = "--- FAIL: "
	name, at := "", -1
	for i := 0; ; {
		j := strings.Index(s[i:], mark)
		if j < 0 {
			break
		}
		i += j + len(mark)
		n, _, _ := strings.Cut(s[i:], " ")
		if at < 0 || strings.Count(n, "/") > strings.Count(name, "/") {
			name, at = n, i-len(mark)
		}
	}
	if at < 0 {
		return -1
	}
	if j := strings.LastIndex(s, "=== RUN   "+name+"\n"); j >= 0 {
		return j
	}
	return at
}
