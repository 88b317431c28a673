package launch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmactor/rdmactor/internal/affinity"
)

// KillGrace is how long Run waits after SIGTERM before it sends SIGKILL.
const KillGrace = 2 * time.Second

// InheritTransport as Options.Transport leaves RDMACTOR_TRANSPORT as this
// process's environment has it, or unset, so that each rank's program
// uses its own default (gin: "auto" where the program registered it, else
// "shm").
const InheritTransport = "inherit"

// ErrTimeout is returned (wrapped) by Run when Options.Timeout ran out.
var ErrTimeout = errors.New("launch: timeout")

// ErrBindUnsupported is CoreBlocks' error (wrapped) where the OS has no
// CPU affinity to bind ranks with.
var ErrBindUnsupported = affinity.ErrUnsupported

// Options describes a job for Run: its ranks on this host, and for a job
// across hosts (WorldSize > NP) where they stand in it.
type Options struct {
	NP        int      // number of ranks on this host, >= 1
	Transport string   // RDMACTOR_TRANSPORT; default "shm"; InheritTransport sets none
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
	// DumpOnTimeout makes a job stopped by Timeout or by the deadline of
	// Run's context send SIGQUIT instead of SIGTERM first: a Go rank then
	// prints every goroutine's stack to its stderr (which Run forwards)
	// and exits, so a hung rank says where it hung. SIGKILL follows after
	// KillGrace as for SIGTERM. A cancelled context still sends SIGTERM;
	// where there are no signals (not unix) it changes nothing.
	DumpOnTimeout bool
	// Host is the host of the bootstrap address (rank 0's control
	// endpoint) when Addr is not set: rank 0 listens on a free port of it;
	// default 127.0.0.1.
	Host string
	// WorldSize is the number of ranks of the whole job; default NP. Above
	// NP, other launchers (other hosts) start the rest, and Addr, the same
	// for all of them, is required, as is a job secret they share in this
	// process's environment (EnvSecret or EnvSecretFile).
	WorldSize int
	// RankBase is the rank of this launcher's first rank: its ranks are
	// RankBase .. RankBase+NP-1 (torchrun numbers node by node alike).
	RankBase int
	// Addr is the bootstrap address, host:port; default a free port on
	// Host. The launcher of rank 0 (RankBase 0) checks that it can listen
	// there before it starts anything.
	Addr string
	// Job is the job name; default a random one on one host, and across
	// hosts EnvJob of this process's environment or else one every
	// launcher derives alike from the secret and Addr.
	Job string
	// Cleanup, if set, is called with the job name once every rank has
	// exited, to remove what the ranks left behind (shm.Cleanup removes
	// the job's named shm files, RDMACTOR_SHM_FILES=named). Its error is
	// joined to Run's.
	Cleanup func(job string) error
	// CPUs, if set, binds local rank i to the processors CPUs[i] (its CPU
	// affinity, which its Go runtime sizes GOMAXPROCS from), as CoreBlocks
	// divides them; one entry per rank (NP). Linux only
	// (ErrBindUnsupported elsewhere).
	CPUs [][]int
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
// results, indexed by local rank (rank - o.RankBase). Its error is nil when every rank exited with 0;
// otherwise it is a *RankError naming the first failed rank, ErrTimeout
// (wrapped) when o.Timeout ran out, ctx's error when ctx ended (ranks are
// killed then too), or a start error; an error of o.Cleanup is joined. The
// results are returned in every case where ranks were started.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.NP < 1 {
		return nil, fmt.Errorf("launch: NP = %d, want >= 1", o.NP)
	}
	if o.WorldSize == 0 {
		o.WorldSize = o.NP
	}
	if o.CPUs != nil && len(o.CPUs) != o.NP {
		return nil, fmt.Errorf("launch: CPUs for %d ranks, NP = %d", len(o.CPUs), o.NP)
	}
	if o.RankBase < 0 || o.RankBase+o.NP > o.WorldSize {
		return nil, fmt.Errorf("launch: ranks %d..%d do not fit a world of %d", o.RankBase, o.RankBase+o.NP-1, o.WorldSize)
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
	spans := o.WorldSize > o.NP
	var secret string
	if spans {
		if o.Addr == "" {
			return nil, errors.New("launch: a job across hosts needs the bootstrap address (Addr), the same on every host")
		}
		var err error
		if secret, err = sharedSecret(); err != nil {
			return nil, err
		}
	}
	addr := o.Addr
	if addr == "" {
		port, err := freePort(o.Host)
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(o.Host, strconv.Itoa(port))
	} else if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("launch: bootstrap address %q: %w", addr, err)
	} else if o.RankBase == 0 {
		// Rank 0 serves the rendezvous here: fail now, and clearly, where
		// it could not.
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("launch: rank 0 cannot serve the bootstrap address %s from this host (is it this host's address, and the port free?): %w", addr, err)
		}
		l.Close()
	}
	name := o.Job
	switch {
	case name != "":
	case spans && os.Getenv(EnvJob) != "":
		name = os.Getenv(EnvJob)
	case spans:
		name = sharedJobName(secret, addr)
	default:
		name = jobName()
	}
	env := append(os.Environ(), o.Env...)
	env = append(env,
		EnvWorldSize+"="+strconv.Itoa(o.WorldSize),
		EnvLocalSize+"="+strconv.Itoa(o.NP),
		EnvBootstrap+"="+addr,
		EnvJob+"="+name,
	)
	if o.Transport != InheritTransport {
		env = append(env, EnvTransport+"="+o.Transport)
	}
	if _, set := os.LookupEnv(EnvNoPSMBacktrace); !set {
		env = append(env, EnvNoPSMBacktrace+"=1")
	}
	if !spans && os.Getenv(EnvSecret) == "" && os.Getenv(EnvSecretFile) == "" {
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
	err := j.wait(ctx, startErr)
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

// SecretHowTo says how to make a job secret that every host can share.
const SecretHowTo = "make one with (umask 077; openssl rand -hex 32 > secret) and set " + EnvSecretFile + "=secret on every host (or " + EnvSecret + " to its content)"

// sharedSecret returns the job secret of this process's environment, as
// the ranks will read it (internal/bootstrap): hex in EnvSecret, or in the
// file EnvSecretFile names, which only its owner may read. Across hosts no
// launcher can make it up: every host must have the same one.
func sharedSecret() (string, error) {
	h := strings.TrimSpace(os.Getenv(EnvSecret))
	if f := os.Getenv(EnvSecretFile); h == "" && f != "" {
		st, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("launch: %s: %w", EnvSecretFile, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("launch: %s=%s: mode %v, want no access for group and others (chmod 600)", EnvSecretFile, f, st.Mode().Perm())
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("launch: %s: %w", EnvSecretFile, err)
		}
		h = strings.TrimSpace(string(b))
	}
	if h == "" {
		return "", fmt.Errorf("launch: a job across hosts needs a secret all hosts share, and neither %s nor %s is set: %s", EnvSecret, EnvSecretFile, SecretHowTo)
	}
	b, err := hex.DecodeString(h)
	if err != nil || len(b) < minSecret {
		return "", fmt.Errorf("launch: the job secret must be at least %d bytes in hex: %s", minSecret, SecretHowTo)
	}
	return hex.EncodeToString(b), nil // one spelling on every host
}

// minSecret is internal/bootstrap's MinSecret, in bytes.
const minSecret = 16

// sharedJobName is "j" and 16 hex digits of a hash of the secret and the
// bootstrap address: the same on every host of the job without another
// flag, and a new one with each new secret.
func sharedJobName(secret, addr string) string {
	h := sha256.Sum256([]byte("rdmactor job name\x00" + secret + "\x00" + addr))
	return "j" + hex.EncodeToString(h[:8])
}

// jobName returns "j<pid>x<8 random hex digits>".
func jobName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("j%dx%s", os.Getpid(), hex.EncodeToString(b[:]))
}
