package shm

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// Environment of the child rank started by startChild.
const (
	envChild = "RDMACTOR_SHM_TEST_CHILD" // "wait", "hang" or "setup"
	envJob   = "RDMACTOR_SHM_TEST_JOB"
	payload  = "hello from rank 0"
)

// setupRegions is how many regions the "setup" child registers, one every
// setupPause: its setup spans about the 0-50 ms in which
// TestKillDuringSetup kills it.
const (
	setupRegions = 40
	setupPause   = time.Millisecond
)

// TestChildRank is rank 1 of the cross-process tests; it runs only when
// started by startChild or TestKillDuringSetup. It registers a window,
// prints its descriptor, and then either waits for rank 0's put ("wait") or
// hangs until killed ("hang"). "setup" registers setupRegions windows,
// printing each descriptor, then hangs until killed.
func TestChildRank(t *testing.T) {
	mode := os.Getenv(envChild)
	if mode == "" {
		t.Skip("helper process of TestCrossProcess; runs only when started by it")
	}
	p, err := Open(rdma.Config{Rank: 1, Size: 2, Job: os.Getenv(envJob)})
	require.NoError(t, err)
	defer p.Close()
	if mode == "setup" {
		for range setupRegions {
			r, err := p.RegisterMemory(64<<10, 0)
			require.NoError(t, err)
			fmt.Printf("desc=%s\n", hex.EncodeToString(r.Descriptor()))
			time.Sleep(setupPause)
		}
		time.Sleep(time.Minute)
		t.Fatal("not killed")
	}
	r, err := p.RegisterMemory(4096, 0)
	require.NoError(t, err)
	fmt.Printf("desc=%s\n", hex.EncodeToString(r.Descriptor()))
	if mode == "hang" {
		time.Sleep(time.Minute)
		t.Fatal("not killed")
	}
	sig := Word(r.Bytes(), 0)
	deadline := time.Now().Add(20 * time.Second)
	for sig.Load() == 0 {
		require.True(t, time.Now().Before(deadline), "no signal from rank 0")
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, payload, string(r.Bytes()[64:64+len(payload)]))
}

// startChild starts rank 1 in a child process and returns it with the
// descriptor it printed and a wait function that reaps it (logging its
// output if it failed).
func startChild(t *testing.T, job, mode string) (*exec.Cmd, []byte, func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildRank$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envJob+"="+job)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if h, ok := strings.CutPrefix(sc.Text(), "desc="); ok {
			desc, err := hex.DecodeString(h)
			require.NoError(t, err)
			rest := make(chan []byte, 1)
			go func() { b, _ := io.ReadAll(out); rest <- b }()
			return cmd, desc, func() error {
				b := <-rest
				err := cmd.Wait()
				if err != nil {
					t.Logf("child output:\n%s", b)
				}
				return err
			}
		}
		t.Log("child:", sc.Text())
	}
	_ = cmd.Wait()
	t.Fatalf("child printed no descriptor: %v", sc.Err())
	return nil, nil, nil
}

func TestCrossProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	job := testJob(t)
	_, desc, wait := startChild(t, job, "wait")
	p := openRank(t, job, 0, 2)
	imp, err := p.Import(1, desc)
	require.NoError(t, err)
	src, err := p.RegisterMemory(64, rdma.LocalOnly)
	require.NoError(t, err)
	copy(src.Bytes(), payload)
	q, err := p.Connect(1, func(uint64, error) {})
	require.NoError(t, err)
	require.NoError(t, q.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: src, Remote: imp, RemoteOff: 64, Len: len(payload),
		Signal: rdma.Signal{Mode: rdma.SignalInc, Region: imp, Off: 0, ModeOff: 8}}}))
	require.NoError(t, wait(), "child rank checks the data")
}

// TestKilledRank: a rank killed with SIGKILL leaves no memfd region; in
// named mode it leaves its file, which Cleanup of the job (what the launcher
// runs after the ranks exit) removes.
func TestKilledRank(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	job := testJob(t)
	cmd, _, _ := startChild(t, job, "hang")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())
	if testFiles(t) == modeMemfd {
		assert.Empty(t, jobFiles(t, job), "a killed rank leaves no file")
		return
	}
	files := jobFiles(t, job)
	require.Len(t, files, 1, "the killed rank's named file is left behind")
	require.NoError(t, Cleanup(job))
	assert.Empty(t, jobFiles(t, job))
}

// TestImportExitedOwner: a memfd region dies with its owner, and importing
// it afterwards says so.
func TestImportExitedOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Setenv(EnvFiles, "memfd")
	job := testJob(t)
	cmd, desc, _ := startChild(t, job, "hang")
	p := openRank(t, job, 0, 2)
	imp, err := p.Import(1, desc)
	require.NoError(t, err, "the owner is alive")
	require.NoError(t, imp.Close())

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())
	_, err = p.Import(1, desc)
	require.ErrorIs(t, err, ErrOwnerGone)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d has exited", cmd.Process.Pid))
	t.Log(err)
}

// TestKillDuringSetup kills rank 1 with SIGKILL at a random moment 0-50 ms
// after its start (before it opens its provider, while it registers
// regions, while rank 0 imports them, or once it is set up) and checks that
// no file of the job is left in the shm directory, with no Cleanup.
func TestKillDuringSetup(t *testing.T) {
	t.Setenv(EnvFiles, "memfd")
	trials := 50
	if testing.Short() || raceEnabled {
		trials = 10
	}
	var exported, imported, left int
	for i := range trials {
		e, n, files := killDuringSetup(t, time.Duration(mrand.Int64N(int64(50*time.Millisecond))))
		if e > 0 {
			exported++
		}
		imported += n
		if len(files) > 0 {
			left++
			t.Errorf("trial %d: files left: %v", i, files)
		}
	}
	t.Logf("%d trials: %d killed after exporting a region, %d imports made by rank 0, %d left files",
		trials, exported, imported, left)
}

// killDuringSetup is one trial of TestKillDuringSetup: it starts the
// "setup" child in a new job, imports every region it prints, kills it
// after delay, and returns how many regions it printed and rank 0 imported,
// and the job's files left once it is reaped.
func killDuringSetup(t *testing.T, delay time.Duration) (exported, imported int, files []string) {
	t.Helper()
	job := testJob(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestChildRank$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"=setup", envJob+"="+job)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p, err := Open(rdma.Config{Rank: 0, Size: 2, Job: job})
	require.NoError(t, err)
	defer p.Close()
	require.NoError(t, cmd.Start())
	start := time.Now()

	type result struct{ exported, imported int }
	done := make(chan result, 1)
	go func() {
		var res result
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h, ok := strings.CutPrefix(sc.Text(), "desc=")
			if !ok {
				continue
			}
			res.exported++
			desc, err := hex.DecodeString(h)
			if !assert.NoError(t, err) {
				continue
			}
			imp, err := p.Import(1, desc)
			if err != nil {
				// Only the kill may fail an import.
				assert.ErrorIs(t, err, ErrOwnerGone)
				continue
			}
			res.imported++
			assert.NoError(t, imp.Close())
		}
		_, _ = io.Copy(io.Discard, out)
		done <- res
	}()

	time.Sleep(delay - time.Since(start))
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	var res result
	select {
	case res = <-done: // stdout closes when the child dies
	case <-ctx.Done():
		t.Fatal("child's stdout still open 30 s after SIGKILL")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "killed, not failed")
	return res.exported, res.imported, jobFiles(t, job)
}

// TestNamedFiles runs this package's tests again with EnvFiles=named in a
// child process (the memfd-only tests aside), so that both modes are
// covered by one go test.
func TestNamedFiles(t *testing.T) {
	if testFiles(t) == modeNamed {
		t.Skip("already running in named mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"-test.count=1", "-test.skip=^(TestNamedFiles|TestKillDuringSetup|TestImportExitedOwner)$"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if testing.Verbose() {
		args = append(args, "-test.v")
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), EnvFiles+"=named")
	out, err := cmd.CombinedOutput()
	if err != nil || testing.Verbose() {
		t.Logf("named mode:\n%s", out)
	}
	require.NoError(t, err, "the suite in named mode")
}
