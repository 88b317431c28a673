package shm

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
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
	envChild = "RDMACTOR_SHM_TEST_CHILD" // "wait" or "hang"
	envJob   = "RDMACTOR_SHM_TEST_JOB"
	payload  = "hello from rank 0"
)

// TestChildRank is rank 1 of the cross-process tests; it runs only when
// started by startChild. It registers a window, prints its descriptor, and
// then either waits for rank 0's put ("wait") or hangs until killed ("hang").
func TestChildRank(t *testing.T) {
	mode := os.Getenv(envChild)
	if mode == "" {
		t.Skip("helper process of TestCrossProcess; runs only when started by it")
	}
	p, err := Open(rdma.Config{Rank: 1, Size: 2, Job: os.Getenv(envJob)})
	require.NoError(t, err)
	defer p.Close()
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

// TestKilledRank: a rank killed with SIGKILL leaves its file; Cleanup of the
// job (what the launcher runs after the ranks exit) removes it.
func TestKilledRank(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	job := testJob(t)
	cmd, _, _ := startChild(t, job, "hang")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())
	files := jobFiles(t, job)
	require.Len(t, files, 1, "the killed rank's file is left behind")
	require.NoError(t, Cleanup(job))
	assert.Empty(t, jobFiles(t, job))
}
