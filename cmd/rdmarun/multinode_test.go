package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/testutils"
)

// envRunMain makes the test binary act as rdmarun: the multi-node test
// starts it as separate "node" processes.
const envRunMain = "RDMARUN_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envRunMain) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// cleanEnv is this process's environment without rdmactor's variables, so
// that a job's come only from the launcher and the test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RDMACTOR_") {
			env = append(env, kv)
		}
	}
	return env
}

// Two rdmarun processes on this host act as two nodes of one job of 4
// ranks: node K starts ranks 2K and 2K+1, rank 0 serves the rendezvous at
// -master, and each rank puts a block to its right neighbour across the
// node boundary (putsignal), then runs barriers and collectives (barrier).
// The nodes share the secret, one through a file and one through the
// variable (in another spelling of the same hex).
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the examples and runs two launchers")
	}
	bin := testutils.BuildExamples(t, "putsignal", "barrier")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	secret := "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, prog := range [][]string{
		{"putsignal", "-bytes", "4096"},
		{"barrier", "-checks", "200", "-reps", "1", "-rep-seconds", "0.02", "-bind", "none"},
	} {
		t.Run(prog[0], func(t *testing.T) {
			master := "127.0.0.1:" + strconv.Itoa(freePort(t))
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			type node struct {
				cmd      *exec.Cmd
				out, err bytes.Buffer
			}
			nodes := make([]*node, 2)
			for k := range nodes {
				n := &node{}
				args := append([]string{"-nnodes", "2", "-node-rank", strconv.Itoa(k), "-master", master,
					"-np", "2", "-bind", "none", "-transport", "shm", "-timeout", "90s", filepath.Join(bin, prog[0])}, prog[1:]...)
				n.cmd = exec.CommandContext(ctx, self, args...)
				n.cmd.Env = append(cleanEnv(), envRunMain+"=1")
				if k == 0 {
					n.cmd.Env = append(n.cmd.Env, "RDMACTOR_JOB_SECRET_FILE="+secretFile)
				} else {
					n.cmd.Env = append(n.cmd.Env, "RDMACTOR_JOB_SECRET="+strings.ToUpper(secret))
				}
				n.cmd.Stdout, n.cmd.Stderr = &n.out, &n.err
				n.cmd.WaitDelay = 5 * time.Second
				if err := n.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				nodes[k] = n
			}
			for k, n := range nodes {
				if err := n.cmd.Wait(); err != nil {
					t.Errorf("node %d: %v\nstdout:\n%s\nstderr:\n%s", k, err, n.out.String(), n.err.String())
				}
			}
			if t.Failed() {
				return
			}
			switch prog[0] {
			case "putsignal":
				// "[<rank>] rank <rank>/4: got ... from rank <left>": node K
				// prints ranks 2K and 2K+1, each numbered alike by the
				// launcher and by the Comm.
				re := regexp.MustCompile(`^\[(\d)\] rank (\d)/4: got 4096 bytes from rank (\d) via shm, verified`)
				for k, n := range nodes {
					var got []string
					for _, line := range strings.Split(strings.TrimSpace(n.out.String()), "\n") {
						m := re.FindStringSubmatch(line)
						if m == nil {
							t.Errorf("node %d: unexpected line %q", k, line)
							continue
						}
						r, _ := strconv.Atoi(m[2])
						if m[1] != m[2] || m[3] != strconv.Itoa((r+3)%4) {
							t.Errorf("node %d: line %q: wrong numbering", k, line)
						}
						got = append(got, m[2])
					}
					sort.Strings(got)
					if want := fmt.Sprintf("%d %d", 2*k, 2*k+1); strings.Join(got, " ") != want {
						t.Errorf("node %d ran ranks %v, want %s", k, got, want)
					}
				}
			case "barrier":
				if !strings.Contains(nodes[0].out.String(), "[0] # 4 ranks") ||
					!strings.Contains(nodes[0].out.String(), "barriers checked: 200 flat, 200 dissemination") {
					t.Errorf("node 0: no report of 4 ranks' checked barriers:\n%s", nodes[0].out.String())
				}
			}
			t.Logf("node 0:\n%s%s", nodes[0].out.String(), nodes[0].err.String())
		})
	}
}

// Each node's ranks get their numbers in the job and on the node.
func TestNodeNumbering(t *testing.T) {
	t.Setenv("RDMACTOR_TRANSPORT", "")
	t.Setenv("RDMACTOR_JOB_SECRET", "00112233445566778899aabbccddeeff")
	t.Setenv("RDMACTOR_JOB", "")
	var out, errOut bytes.Buffer
	script := `echo $RDMACTOR_RANK $RDMACTOR_WORLD_SIZE $RDMACTOR_LOCAL_RANK $RDMACTOR_LOCAL_SIZE $RDMACTOR_BOOTSTRAP $RDMACTOR_TRANSPORT ${RDMACTOR_JOB%%[0-9a-f]*}`
	code := run([]string{"-nnodes", "3", "-node-rank", "2", "-master", "10.1.2.3:4567", "-np", "2", "sh", "-c", script}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	l := strings.Split(strings.TrimSpace(out.String()), "\n")
	sort.Strings(l)
	if got, want := strings.Join(l, "|"), "[4] 4 6 0 2 10.1.2.3:4567 j|[5] 5 6 1 2 10.1.2.3:4567 j"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Without a shared secret, a job across nodes does not start, and says how
// to make one.
func TestNodesNeedSecret(t *testing.T) {
	t.Setenv("RDMACTOR_JOB_SECRET", "")
	t.Setenv("RDMACTOR_JOB_SECRET_FILE", "")
	var out, errOut bytes.Buffer
	code := run([]string{"-nnodes", "2", "-node-rank", "1", "-master", "127.0.0.1:1", "-np", "1", "true"}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "RDMACTOR_JOB_SECRET_FILE") || !strings.Contains(errOut.String(), "openssl rand -hex 32") {
		t.Errorf("exit code %d, stderr %q: want a failure saying how to make a secret", code, errOut.String())
	}
	loose := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(loose, []byte("00112233445566778899aabbccddeeff"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RDMACTOR_JOB_SECRET_FILE", loose)
	errOut.Reset()
	if code := run([]string{"-nnodes", "2", "-node-rank", "1", "-master", "127.0.0.1:1", "true"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "chmod 600") {
		t.Errorf("secret file of mode 0644: exit code %d, stderr %q", code, errOut.String())
	}
	t.Setenv("RDMACTOR_JOB_SECRET_FILE", "")
	t.Setenv("RDMACTOR_JOB_SECRET", "abcd")
	errOut.Reset()
	if code := run([]string{"-nnodes", "2", "-node-rank", "1", "-master", "127.0.0.1:1", "true"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "at least 16 bytes") {
		t.Errorf("short secret: exit code %d, stderr %q", code, errOut.String())
	}
}

// Node 0 serves the rendezvous: a -master it cannot listen on fails before
// any rank starts.
func TestMasterNotHere(t *testing.T) {
	t.Setenv("RDMACTOR_JOB_SECRET", "00112233445566778899aabbccddeeff")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errOut bytes.Buffer
	code := run([]string{"-nnodes", "2", "-master", l.Addr().String(), "sh", "-c", "echo started"}, &out, &errOut)
	if code == 0 || !strings.Contains(errOut.String(), "cannot serve the bootstrap address") || out.Len() != 0 {
		t.Errorf("exit code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}
