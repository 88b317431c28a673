package launch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/launch"
)

// sh runs script with sh -c for every rank.
func sh(np int, script string) launch.Options {
	return launch.Options{NP: np, Prog: "sh", Args: []string{"-c", script}}
}

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(l)
	return l
}

func TestOutputAndEnv(t *testing.T) {
	// Run sets IPATH_NO_BACKTRACE=1 where the caller's environment has none.
	if v, set := os.LookupEnv(launch.EnvNoPSMBacktrace); set {
		os.Unsetenv(launch.EnvNoPSMBacktrace)
		t.Cleanup(func() { os.Setenv(launch.EnvNoPSMBacktrace, v) })
	}
	var out, errOut bytes.Buffer
	o := sh(3, `echo "hello $RDMACTOR_RANK/$RDMACTOR_WORLD_SIZE $RDMACTOR_TRANSPORT $FOO$IPATH_NO_BACKTRACE"; `+
		`echo "err $RDMACTOR_RANK" >&2; printf "no newline"; `+
		`case "$RDMACTOR_BOOTSTRAP" in 127.0.0.1:[0-9]*) ;; *) exit 9;; esac; `+
		`case "$RDMACTOR_JOB" in j*x*) ;; *) exit 8;; esac`)
	o.Stdout, o.Stderr = &out, &errOut
	o.Env = []string{"FOO=bar"}
	var job string
	o.Cleanup = func(j string) error { job = j; return nil }
	res, err := launch.Run(context.Background(), o)
	if err != nil {
		t.Fatalf("Run: %v (%+v)", err, res)
	}
	want := []string{
		"[0] hello 0/3 shm bar1", "[0] no newline",
		"[1] hello 1/3 shm bar1", "[1] no newline",
		"[2] hello 2/3 shm bar1", "[2] no newline",
	}
	if got := sortedLines(out.String()); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("stdout:\n%s\nwant (sorted) %q", out.String(), want)
	}
	if got := sortedLines(errOut.String()); strings.Join(got, "|") != "[0] err 0|[1] err 1|[2] err 2" {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	if !strings.HasPrefix(job, "j") {
		t.Errorf("Cleanup got job %q", job)
	}
	for r, x := range res {
		if x.Rank != r || x.ExitCode != 0 || x.Err != nil {
			t.Errorf("result %d: %+v", r, x)
		}
	}
}

func TestExitCode(t *testing.T) {
	o := sh(4, `[ "$RDMACTOR_RANK" = 2 ] && exit 7; exit 0`)
	res, err := launch.Run(context.Background(), o)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 2 || re.ExitCode != 7 || !strings.Contains(err.Error(), "rank 2") {
		t.Fatalf("Run: %v, want rank 2 exit code 7", err)
	}
	for r, x := range res {
		want := 0
		if r == 2 {
			want = 7
		}
		if x.ExitCode != want {
			t.Errorf("rank %d: exit code %d, want %d", r, x.ExitCode, want)
		}
	}
}

func TestKillOnFailure(t *testing.T) {
	// Rank 0 fails at once; the others sleep (in a child of sh, which the
	// group kill must reach), ignoring nothing.
	o := sh(3, `[ "$RDMACTOR_RANK" = 0 ] && exit 5; sleep 30; exit 0`)
	o.KillOnFailure = true
	start := time.Now()
	res, err := launch.Run(context.Background(), o)
	took := time.Since(start)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 0 || re.ExitCode != 5 {
		t.Fatalf("Run: %v, want rank 0 exit code 5", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %v, want the sleeping ranks killed at once", took)
	}
	for _, x := range res[1:] {
		if x.ExitCode != 128+15 {
			t.Errorf("rank %d: exit code %d, want 143 (SIGTERM)", x.Rank, x.ExitCode)
		}
	}
	t.Logf("failure to all exited: %v", took)
}

func TestKillAfterGrace(t *testing.T) {
	// A rank that ignores SIGTERM is killed KillGrace later.
	o := sh(2, `trap "" TERM; [ "$RDMACTOR_RANK" = 0 ] && { sleep 0.2; exit 1; }; while :; do sleep 0.05; done`)
	o.KillOnFailure = true
	start := time.Now()
	res, _ := launch.Run(context.Background(), o)
	took := time.Since(start)
	if took < launch.KillGrace || took > launch.KillGrace+3*time.Second {
		t.Errorf("took %v, want about KillGrace (%v)", took, launch.KillGrace)
	}
	if res[1].ExitCode != 128+9 {
		t.Errorf("rank 1: exit code %d, want 137 (SIGKILL)", res[1].ExitCode)
	}
}

func TestNoKillOnFailure(t *testing.T) {
	o := sh(2, `[ "$RDMACTOR_RANK" = 0 ] && exit 4; sleep 0.3; exit 0`)
	res, err := launch.Run(context.Background(), o)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 0 || res[1].ExitCode != 0 {
		t.Errorf("Run: %v %+v, want rank 0 failed and rank 1 done", err, res)
	}
}

func TestTimeout(t *testing.T) {
	o := sh(2, `sleep 30`)
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := launch.Run(context.Background(), o)
	if !errors.Is(err, launch.ErrTimeout) {
		t.Errorf("Run: %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

// DumpOnTimeout: a job stopped by its Timeout or its context's deadline
// gets SIGQUIT first (a Go rank dumps its stacks); a cancelled one SIGTERM.
func TestDumpOnTimeout(t *testing.T) {
	const script = `trap 'echo got QUIT; exit 3' QUIT; trap 'echo got TERM; exit 4' TERM; sleep 30 & wait`
	for _, c := range []struct {
		name   string
		ctx    func() (context.Context, context.CancelFunc)
		tmo    time.Duration
		dump   bool
		want   string
		wantEr error
	}{
		{"timeout", noCtx, 300 * time.Millisecond, true, "got QUIT", launch.ErrTimeout},
		{"timeout, no dump", noCtx, 300 * time.Millisecond, false, "got TERM", launch.ErrTimeout},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 300*time.Millisecond)
		}, 0, true, "got QUIT", context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			return ctx, cancel
		}, 0, true, "got TERM", context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			o := sh(2, script)
			o.Stdout, o.Timeout, o.DumpOnTimeout = &out, c.tmo, c.dump
			ctx, cancel := c.ctx()
			defer cancel()
			res, err := launch.Run(ctx, o)
			if !errors.Is(err, c.wantEr) {
				t.Fatalf("Run: %v, want %v", err, c.wantEr)
			}
			for _, r := range res {
				if line := fmt.Sprintf("[%d] %s", r.Rank, c.want); !strings.Contains(out.String(), line) {
					t.Errorf("output %q lacks %q", out.String(), line)
				}
			}
		})
	}
}

func noCtx() (context.Context, context.CancelFunc) { return context.Background(), func() {} }

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := launch.Run(ctx, sh(2, `sleep 30`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run: %v, want DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
}

func TestLeftoverChildKilled(t *testing.T) {
	// A rank that leaves a background child holding its stdout: Run still
	// returns, and the child is gone.
	pidFile := filepath.Join(t.TempDir(), "pid")
	o := sh(1, `sleep 30 & echo $! > `+pidFile+`; exit 0`)
	start := time.Now()
	if _, err := launch.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(b))
	// A killed child may stay a zombie until reparented and reaped; wait for it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background child %s still runs: %s", pid, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartError(t *testing.T) {
	res, err := launch.Run(context.Background(), launch.Options{NP: 2, Prog: "/nonexistent/prog"})
	if err == nil || !strings.Contains(err.Error(), "start rank 0") {
		t.Errorf("Run: %v", err)
	}
	if len(res) != 2 || res[0].ExitCode != -1 {
		t.Errorf("results: %+v", res)
	}
	if _, err := launch.Run(context.Background(), launch.Options{NP: 0, Prog: "true"}); err == nil {
		t.Error("NP 0: no error")
	}
}

func TestCleanupError(t *testing.T) {
	o := sh(1, `exit 0`)
	o.Cleanup = func(string) error { return errors.New("boom") }
	if _, err := launch.Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("Run: %v, want the cleanup error", err)
	}
}

// A launcher of part of a job across hosts numbers its ranks from RankBase,
// reports them by their rank in the job, and passes the shared address and
// a job name derived from the secret, the same for every launcher.
func TestPartOfAJob(t *testing.T) {
	t.Setenv(launch.EnvSecret, "00112233445566778899AABBCCDDEEFF")
	t.Setenv(launch.EnvSecretFile, "")
	t.Setenv(launch.EnvJob, "")
	var out bytes.Buffer
	o := sh(2, `echo $RDMACTOR_RANK $RDMACTOR_WORLD_SIZE $RDMACTOR_LOCAL_RANK $RDMACTOR_LOCAL_SIZE $RDMACTOR_BOOTSTRAP $RDMACTOR_JOB; [ $RDMACTOR_RANK = 3 ] && exit 6; exit 0`)
	o.Stdout = &out
	o.WorldSize, o.RankBase, o.Addr = 6, 2, "10.0.0.1:29400"
	res, err := launch.Run(context.Background(), o)
	var re *launch.RankError
	if !errors.As(err, &re) || re.Rank != 3 || re.ExitCode != 6 {
		t.Fatalf("Run: %v, want rank 3 failed with 6", err)
	}
	if len(res) != 2 || res[0].Rank != 2 || res[1].Rank != 3 || res[1].ExitCode != 6 {
		t.Errorf("results %+v", res)
	}
	l := sortedLines(out.String())
	if len(l) != 2 || !strings.HasPrefix(l[0], "[2] 2 6 0 2 10.0.0.1:29400 j") || !strings.HasPrefix(l[1], "[3] 3 6 1 2 10.0.0.1:29400 j") {
		t.Fatalf("output %q", l)
	}
	job := strings.Fields(l[0])[6]
	// Another host, the same secret spelt in lower case: the same job.
	t.Setenv(launch.EnvSecret, "00112233445566778899aabbccddeeff")
	out.Reset()
	o = sh(1, `echo $RDMACTOR_JOB`)
	o.Stdout = &out
	o.WorldSize, o.RankBase, o.Addr = 6, 5, "10.0.0.1:29400"
	if _, err := launch.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "[5] "+job {
		t.Errorf("job %q on the other host, want %q", got, "[5] "+job)
	}
	for _, bad := range []launch.Options{
		{NP: 2, WorldSize: 3, RankBase: 2, Addr: "h:1", Prog: "true"},
		{NP: 1, WorldSize: 2, RankBase: 1, Prog: "true"},
	} {
		if _, err := launch.Run(context.Background(), bad); err == nil {
			t.Errorf("Run(%+v): no error", bad)
		}
	}
}
