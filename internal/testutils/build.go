package testutils

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BuildExamples builds the named programs of examples/ into a temporary
// directory of t and returns it: tests that start them as a launcher or
// scheduler would (rdmarun, mpirun).
func BuildExamples(t testing.TB, names ...string) string {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./examples/"+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return dir
}
