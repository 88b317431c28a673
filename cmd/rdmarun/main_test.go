package main

import (
	"bytes"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// bound2 is what 2 ranks print of their processor count (nproc) by
// default: half of this host's each, or all where there is only one.
func bound2() string {
	n := runtime.NumCPU()
	if n >= 2 {
		n /= 2
	}
	return "[0] " + strconv.Itoa(n) + "|[1] " + strconv.Itoa(n)
}

func TestRun(t *testing.T) {
	t.Setenv("RDMACTOR_TRANSPORT", "") // the "ok" case shows that rdmarun sets none
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		stdout  string // sorted lines joined by "|", when not ""
		inError string // substring of stderr, when not ""
	}{
		{"ok", []string{"-np", "2", "sh", "-c", `echo "$RDMACTOR_RANK $RDMACTOR_WORLD_SIZE $RDMACTOR_TRANSPORT"`}, 0, "[0] 0 2|[1] 1 2", ""},
		{"transport", []string{"-np", "2", "-transport", "shm", "sh", "-c", `echo "$RDMACTOR_RANK $RDMACTOR_TRANSPORT"`}, 0, "[0] 0 shm|[1] 1 shm", ""},
		{"prog flags", []string{"-np=1", "-transport=x", "sh", "-c", `echo $0 $1 $RDMACTOR_TRANSPORT`, "-np", "7"}, 0, "[0] -np 7 x", ""},
		{"rank fails", []string{"-np", "3", "sh", "-c", `[ $RDMACTOR_RANK = 1 ] && exit 3; sleep 20`}, 3, "", "rank 1"},
		{"timeout", []string{"-np", "1", "-timeout", "200ms", "sleep", "20"}, 1, "", "timeout"},
		{"no prog", []string{"-np", "2"}, 2, "", "usage"},
		{"bad np", []string{"-np", "0", "true"}, 2, "", "-np 0"},
		{"keep going", []string{"-np", "3", "-keep-going", "sh", "-c", `[ $RDMACTOR_RANK = 1 ] && exit 3; sleep 0.5; echo done $RDMACTOR_RANK`}, 3, "[0] done 0|[2] done 2", "rank 1 exited with code 3"},
		{"np over the limit", []string{"-np", "100000", "true"}, 1, "", "over the limit of"},
		{"bad flag", []string{"-x", "true"}, 2, "", "usage"},
		{"help", []string{"-h"}, 0, "", "usage"},
		{"node rank too big", []string{"-nnodes", "2", "-node-rank", "2", "-master", "h:1", "true"}, 2, "", "-node-rank 2: want in [0, 2)"},
		{"node rank negative", []string{"-node-rank", "-1", "true"}, 2, "", "-node-rank -1"},
		{"bad nnodes", []string{"-nnodes", "0", "true"}, 2, "", "-nnodes 0"},
		{"nodes without master", []string{"-nnodes", "2", "-node-rank", "1", "true"}, 2, "", "needs -master HOST:PORT"},
		{"master without port", []string{"-nnodes", "2", "-master", "node0", "true"}, 2, "", `-master "node0": want HOST:PORT`},
		{"master port 0", []string{"-nnodes", "2", "-master", "node0:0", "true"}, 2, "", "want HOST:PORT"},
		{"master and host", []string{"-nnodes", "2", "-master", "node0:1", "-host", "a", "true"}, 2, "", "-host and -master"},
		{"gomaxprocs", []string{"-np", "2", "-gomaxprocs", "3", "sh", "-c", `echo "$GOMAXPROCS"`}, 0, "[0] 3|[1] 3", ""},
		{"bad gomaxprocs", []string{"-gomaxprocs", "0", "true"}, 2, "", `-gomaxprocs "0"`},
		{"bad bind", []string{"-bind", "socket", "true"}, 2, "", `-bind "socket": want core, auto or none`},
		{"bind core, more ranks than processors", []string{"-np", strconv.Itoa(runtime.NumCPU() + 1), "-bind", "core", "true"}, 2, "", "no core of its own"},
		{"bind auto, more ranks than processors", []string{"-np", strconv.Itoa(runtime.NumCPU() + 1), "-bind", "auto", "sh", "-c", `[ "$(nproc)" = ` + strconv.Itoa(runtime.NumCPU()) + ` ] || exit 5`}, 0, "", ""},
		{"bound by default", []string{"-np", "2", "sh", "-c", `echo "$(nproc)"`}, 0, bound2(), ""},
		{"bind none", []string{"-np", "2", "-bind", "none", "sh", "-c", `echo "$(nproc)"`}, 0, "[0] " + strconv.Itoa(runtime.NumCPU()) + "|[1] " + strconv.Itoa(runtime.NumCPU()), ""},
		{"bind core", []string{"-np", "1", "-bind", "core", "sh", "-c", `echo "$(nproc)"`}, 0, "[0] " + strconv.Itoa(runtime.NumCPU()), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(c.args, &out, &errOut)
			if code != c.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, c.code, errOut.String())
			}
			if c.stdout != "" {
				// Each line trimmed: which rank's line comes last varies.
				l := strings.Split(strings.TrimSpace(out.String()), "\n")
				for i := range l {
					l[i] = strings.TrimSpace(l[i])
				}
				sort.Strings(l)
				if got := strings.Join(l, "|"); got != c.stdout {
					t.Errorf("stdout %q, want %q", got, c.stdout)
				}
			}
			if !strings.Contains(errOut.String(), c.inError) {
				t.Errorf("stderr %q, want it to contain %q", errOut.String(), c.inError)
			}
		})
	}
}

// -gomaxprocs auto divides this process's processors among the ranks
// where they are no more than the processors, and leaves GOMAXPROCS alone
// with more ranks; without the flag GOMAXPROCS is inherited.
func TestGOMAXPROCS(t *testing.T) {
	t.Setenv("GOMAXPROCS", "7")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-np", "1"}, "7"},
		{[]string{"-np", "1", "-gomaxprocs", "auto"}, strconv.Itoa(runtime.NumCPU())},
		{[]string{"-np", "2", "-gomaxprocs", "auto"}, strconv.Itoa(max(1, runtime.NumCPU()/2))},
		{[]string{"-np", strconv.Itoa(runtime.NumCPU()), "-gomaxprocs", "auto"}, "1"},
		{[]string{"-np", strconv.Itoa(2 * runtime.NumCPU()), "-gomaxprocs", "auto"}, "7"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append(c.args, "sh", "-c", `[ "$RDMACTOR_RANK" = 0 ] && echo "$GOMAXPROCS"; true`), &out, &errOut); code != 0 {
			t.Fatalf("%v: exit code %d; stderr:\n%s", c.args, code, errOut.String())
		}
		if got := strings.TrimSpace(out.String()); got != "[0] "+c.want {
			t.Errorf("%v: got %q, want %q", c.args, got, "[0] "+c.want)
		}
	}
}

// Without -transport the ranks inherit RDMACTOR_TRANSPORT from rdmarun's
// environment (and, where it has none, use their program's default).
func TestTransportInherited(t *testing.T) {
	t.Setenv("RDMACTOR_TRANSPORT", "ofi")
	var out, errOut bytes.Buffer
	if code := run([]string{"-np", "1", "sh", "-c", `echo "$RDMACTOR_TRANSPORT"`}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut.String())
	}
	if got := strings.TrimSpace(out.String()); got != "[0] ofi" {
		t.Errorf("got %q, want %q", got, "[0] ofi")
	}
}
