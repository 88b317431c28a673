package launch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

// KillGrace is how long Run waits after SIGTERM before it sends SIGKILL.
const KillGrace = 2 * time.Second

// ErrTimeout is returned (wrapped) by Run when Options.Timeout ran out.
var ErrTimeout = errors.New("launch: timeout")

// Options describes a job for Run.
type Options struct {
	NP        int      // number of ranks, >= 1
	Transport string   // RDMACTOR_TRANSPORT; default "shm"
	Prog      string   // program to run for every rank (a path, or a name looked up in PATH)
	Args      []string // its arguments
	Env       []string // extra "KEY=value" for every rank, after this process's environment
	// Stdout and Stderr receive the ranks' stdout and stderr, each line
	// prefixed "[<rank>] " and written with one Write call (calls are
	// serialized across both writers); default os.Stdout and os.Stderr.
	Stdout, Stderr io.Writer
	// KillOnFailure kills the other ranks (SIGTERM, then SIGKILL after
	// KillGrace) when a rank fails; cmd/rdmarun sets it.
	KillOnFailure bool
	// OnExit, if set, is called as each rank exits (from Run's goroutine,
	// one call at a time), before the other ranks have: a supervisor's
	// report of a rank that failed while the others run on.
	OnExit func(Result)
	// Timeout, if > 0, kills every rank once it has passed and makes Run
	// fail with ErrTimeout.
	Timeout time.Duration
	// Host is the host of the bootstrap address (rank 0's control
	// endpoint); default 127.0.0.1.
	Host string
	// Cleanup, if set, is called with the job name once every rank has
	// exited, to remove what the ranks left behind (shm.Cleanup removes
	// /dev/shm/rdmactor-<job>-*). Its error is joined to Run's.
	Cleanup func(job string) error
}

// Result is how one rank ended.
type Result struct {
	Rank int
	// ExitCode is the exit status; 128+n when killed by signal n; -1 when the
	// rank did not start or could not be waited for.
	ExitCode int
	Err      error // nil when ExitCode is 0; else why the rank failed
}

// RankError is Run's error when a rank failed: the first rank that failed
// (in time), not counting ranks Run killed itself.
type RankError struct {
	Rank     int
	ExitCode int   // as in Result
	Err      error // the rank's Result.Err
}

// Error names the rank, its exit code and its error.
func (e *RankError) Error() string {
	return fmt.Sprintf("rank %d failed with exit code %d: %v", e.Rank, e.ExitCode, e.Err)
}

// Unwrap returns the rank's error.
func (e *RankError) Unwrap() error { return e.Err }

// MaxRanks bounds the ranks one launcher starts on one host: beyond it a
// host has far more ranks than processors, and each rank holds processes,
// pipes and mappings the host runs out of.
const MaxRanks = 4096

// fdsPerRank is what the launcher holds open per rank: its output pipes
// and the process's handles, with room to spare.
const fdsPerRank = 4

// maxRanks is MaxRanks, or less where the open-file limit (getrlimit(2),
// RLIMIT_NOFILE) would run out first.
func maxRanks() int {
	if n, ok := openFileLimit(); ok && (n-64)/fdsPerRank < MaxRanks {
		return max(1, (n-64)/fdsPerRank)
	}
	return MaxRanks
}

// Run starts o.NP ranks of o.Prog, waits for all of them and returns their
// results, indexed by rank. Its error is nil when every rank exited with 0;
// otherwise it is a *RankError naming the first failed rank, ErrTimeout
// (wrapped) when o.Timeout ran out, ctx's error when ctx ended (ranks are
// killed then too), or a start error; an error of o.Cleanup is joined. The
// results are returned in every case where ranks were started.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.NP < 1 {
		return nil, fmt.Errorf("launch: NP = %d, want >= 1", o.NP)
	}
	if most := maxRanks(); o.NP > most {
		return nil, fmt.Errorf("launch: NP = %d, over the limit of %d ranks on one host (%d, or what the open-file limit allows at %d descriptors per rank); run across hosts for more", o.NP, most, MaxRanks, fdsPerRank)
	}
	if o.Prog == "" {
		return nil, errors.New("launch: no program")
	}
	if o.Transport == "" {
		o.Transport = "shm"
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	port, err := freePort(o.Host)
	if err != nil {
		return nil, err
	}
	name := jobName()
	env := append(os.Environ(), o.Env...)
	env = append(env,
		EnvWorldSize+"="+strconv.Itoa(o.NP),
		EnvBootstrap+"="+net.JoinHostPort(o.Host, strconv.Itoa(port)),
		EnvTransport+"="+o.Transport,
		EnvJob+"="+name,
	)
	if os.Getenv(EnvSecret) == "" && os.Getenv(EnvSecretFile) == "" {
		// A job secret of its own (a caller's, e.g. rdmarun across hosts,
		// is inherited): the ranks' environments, readable by this user
		// only (proc(5)), carry it; no control message does.
		var secret [32]byte
		if _, err := rand.Read(secret[:]); err != nil {
			return nil, fmt.Errorf("launch: job secret: %w", err)
		}
		env = append(env, EnvSecret+"="+hex.EncodeToString(secret[:]))
	}
	j := newJob(&o)
	startErr := j.start(env)
	err = j.wait(ctx, startErr)
	if o.Cleanup != nil {
		if cerr := o.Cleanup(name); cerr != nil {
			err = errors.Join(err, fmt.Errorf("launch: cleanup of job %s: %w", name, cerr))
		}
	}
	return j.results(), err
}

// freePort returns a TCP port on host that was free a moment ago.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("launch: find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// jobName returns "j<pid>x<8 random hex digits>".
func jobName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("j%dx%s", os.Getpid(), hex.EncodeToString(b[:]))
}
