package gputest

import (
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

//go:embed testdata/fakecuda.c
var fakeSource string

var (
	fakeOnce sync.Once
	fakePath string
	fakeErr  string
)

// FakeDriver builds testdata/fakecuda.c, a stand-in for libcuda.so.1 whose
// "device" memory is host memory, into a temporary directory (once per
// test binary) and returns its path. It skips t without a C compiler.
func FakeDriver(t testing.TB) string {
	t.Helper()
	if os.Getenv(EnvFake) != "" { // the child of InFakeDriver: the one loaded
		return os.Getenv(cuda.EnvLibCUDA)
	}
	fakeOnce.Do(func() {
		cc, err := exec.LookPath("gcc")
		if err != nil {
			if cc, err = exec.LookPath("cc"); err != nil {
				fakeErr = "no C compiler (gcc or cc) to build the fake CUDA driver"
				return
			}
		}
		dir, err := os.MkdirTemp("", "fakecuda-")
		if err != nil {
			fakeErr = err.Error()
			return
		}
		src := filepath.Join(dir, "fakecuda.c")
		if err := os.WriteFile(src, []byte(fakeSource), 0o644); err != nil {
			fakeErr = err.Error()
			return
		}
		lib := filepath.Join(dir, "libcuda.so.1")
		out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, src).CombinedOutput()
		if err != nil {
			fakeErr = "build fake CUDA driver: " + err.Error() + "\n" + string(out)
			return
		}
		fakePath = lib
	})
	if fakePath == "" {
		t.Skip(fakeErr)
	}
	return fakePath
}

// InFakeDriver runs fn in a child process of the test binary whose
// libcuda.so.1 is the fake (FakeDriver), since a process binds one driver
// for good. In the child it runs fn directly. t must be a top-level test.
func InFakeDriver(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv(EnvFake) != "" {
		fn(t)
		return
	}
	lib := FakeDriver(t)
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1",
		"-test.timeout="+(2*time.Minute).String())
	cmd.Env = append(os.Environ(), cuda.EnvLibCUDA+"="+lib, EnvFake+"=1", EnvRequire+"=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("%s with the fake driver (%v):\n%s", t.Name(), err, out)
	}
	t.Logf("ran with the fake driver:\n%s", out)
}
