// Package mpirun_test runs the examples under Open MPI's mpirun, unchanged:
// the ranks take their numbers from OMPI_COMM_WORLD_*, the rendezvous from
// the single-host default (127.0.0.1 and a port from the Open MPI job id)
// or RDMACTOR_BOOTSTRAP, and the job secret from the environment mpirun
// passes on (-x).
package mpirun_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/testutils"
)

const secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// mpirun returns mpirun's path, or skips the test saying why there is none.
func mpirun(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skipf("mpirun not found (%v): install Open MPI (Debian: apt-get install openmpi-bin) to run the examples under it", err)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Open MPI") {
		t.Skipf("%s is not Open MPI's (%v): %s", p, err, out)
	}
	return p
}

// env is this process's environment without rdmactor's and the
// schedulers' variables, plus extra.
func env(extra ...string) []string {
	var e []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "RDMACTOR_"), strings.HasPrefix(k, "OMPI_"), strings.HasPrefix(k, "PMIX_"),
			strings.HasPrefix(k, "SLURM_"), k == "RANK", k == "WORLD_SIZE", k == "MASTER_ADDR", k == "MASTER_PORT":
			continue
		}
		e = append(e, kv)
	}
	return append(e, extra...)
}

// run runs mpirun with 4 ranks of prog and returns its output.
func run(t *testing.T, mpi string, environ []string, mpiArgs []string, prog ...string) (string, error) {
	t.Helper()
	args := []string{"--oversubscribe", "-np", "4"}
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	args = append(append(args, mpiArgs...), prog...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mpi, args...)
	cmd.Env = environ
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("mpirun %s:\n%s", strings.Join(args, " "), out)
	return string(out), err
}

func TestExamplesUnderMpirun(t *testing.T) {
	mpi := mpirun(t)
	if testing.Short() {
		t.Skip("builds the examples and runs them under mpirun")
	}
	bin := testutils.BuildExamples(t, "putsignal", "barrier", "actors")
	// The secret as a user passes it: exported, and named with -x so that
	// ranks on other hosts get it too.
	secretEnv := env("RDMACTOR_JOB_SECRET=" + secret)
	x := []string{"-x", "RDMACTOR_JOB_SECRET"}
	for _, c := range []struct {
		name string
		prog []string
		want []string // substrings of the output
	}{
		{"putsignal", []string{"putsignal"}, []string{
			"rank 0/4: got 65536 bytes from rank 3 via shm, verified", "rank 1/4: got 65536 bytes from rank 0",
			"rank 2/4: got 65536 bytes from rank 1", "rank 3/4: got 65536 bytes from rank 2"}},
		{"barrier", []string{"barrier", "-checks", "200", "-reps", "1", "-rep-seconds", "0.02"}, []string{
			"# 4 ranks", "barriers checked: 200 flat, 200 dissemination"}},
		{"actors", []string{"actors", "-repeat", "5"}, []string{"4 ranks × 2 workers", "matches a count by rank 0 alone"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prog := append([]string{filepath.Join(bin, c.prog[0])}, c.prog[1:]...)
			out, err := run(t, mpi, secretEnv, x, prog...)
			if err != nil {
				t.Fatalf("mpirun: %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q", w)
				}
			}
		})
	}
	// Across hosts mpirun does not say where rank 0 runs: the user names it
	// with RDMACTOR_BOOTSTRAP, and a secret file works as the variable does.
	t.Run("bootstrap and secret file", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		l.Close()
		f := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(f, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, mpi, env(), []string{"-x", "RDMACTOR_JOB_SECRET_FILE=" + f, "-x", "RDMACTOR_BOOTSTRAP=" + addr},
			filepath.Join(bin, "putsignal"), "-bytes", "4096")
		if err != nil {
			t.Fatalf("mpirun: %v", err)
		}
		if n := strings.Count(out, "verified"); n != 4 {
			t.Errorf("%d ranks verified their block, want 4", n)
		}
	})
	// Without a secret the ranks refuse to start, saying how to give one.
	t.Run("no secret", func(t *testing.T) {
		out, err := run(t, mpi, env(), nil, filepath.Join(bin, "putsignal"))
		if err == nil || !strings.Contains(out, "no job secret") {
			t.Errorf("mpirun without a secret: %v; want the ranks to fail for want of one", err)
		}
	})
}
