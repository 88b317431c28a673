package actor_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
)

// The fault tests: a rank of 4 is killed with SIGKILL in the middle of
// traffic, in processes started by the launcher (internal/launch, as
// rdmarun -keep-going runs them), by the rdmarun binary itself, and by
// hand with the RDMACTOR_* variables set as a scheduler would. Run them
// 20 times each with RDMACTOR_FAULT_REPS=20 (default 1):
//
//	RDMACTOR_FAULT_REPS=20 go test -race -run '^TestFaultKilledRank' -timeout 60m ./actor
func init() { testutils.Role("fault", roleFault) }

const (
	// envFaultVictim is the rank role "fault" kills.
	envFaultVictim = "TEST_FAULT_VICTIM"
	// envFaultReps is how many times each fault test runs its job.
	envFaultReps = "RDMACTOR_FAULT_REPS"

	// faultRanks is the job size of the fault tests.
	faultRanks = 4
	// faultTraffic is how long the survivors go on after they know of the loss.
	faultTraffic = 5 * time.Second
	// pendingLimit bounds how long after its detection a request pending
	// towards the lost rank may still wait.
	pendingLimit = 100 * time.Millisecond
	// laterLimit bounds a request or send to the lost rank after the
	// detection: it fails at once, well before any timeout (10 s here),
	// whatever the scheduling delays of a loaded host.
	laterLimit = time.Second
	// killedExit is the exit code a launcher reports for a rank killed by
	// SIGKILL (128 + 9).
	killedExit = 137
)

// faultReps is envFaultReps, default 1.
func faultReps(t *testing.T) int {
	s := os.Getenv(envFaultReps)
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count >= 1", envFaultReps, s)
	}
	return n
}

// faultVictims: a rank of no special role, and rank 0, which holds the
// bootstrap's coordinator (what survives that: docs/actors.md, Faults).
var faultVictims = []int{2, 0}

// checkFaultExits checks the exit codes of a fault job: killedExit for
// the victim, 0 for the others.
func checkFaultExits(t *testing.T, victim int, codes []int, errs []error) {
	t.Helper()
	if len(codes) != faultRanks {
		t.Fatalf("%d results, want %d", len(codes), faultRanks)
	}
	for r, c := range codes {
		want := 0
		if r == victim {
			want = killedExit
		}
		if c != want {
			t.Errorf("rank %d: exit code %d (%v), want %d", r, c, errs[r], want)
		}
	}
}

// TestFaultKilledRankLauncher: the ranks are started by internal/launch
// with KillOnFailure off, as rdmarun -keep-going starts them.
func TestFaultKilledRankLauncher(t *testing.T) {
	for _, victim := range faultVictims {
		t.Run("victim"+strconv.Itoa(victim), func(t *testing.T) {
			for rep := range faultReps(t) {
				res := testutils.RunRanksOpts(t, launch.Options{NP: faultRanks, Cleanup: shm.Cleanup,
					Env: []string{envFaultVictim + "=" + strconv.Itoa(victim)}}, "fault")
				codes, errs := make([]int, len(res)), make([]error, len(res))
				for i, r := range res {
					codes[i], errs[i] = r.ExitCode, r.Err
				}
				checkFaultExits(t, victim, codes, errs)
				if t.Failed() {
					t.Fatalf("repetition %d failed", rep)
				}
			}
		})
	}
}

// TestFaultKilledRankRdmarun: the ranks are started by the rdmarun
// binary with -keep-going, which reports the killed rank, lets the others
// finish, and exits with the killed rank's code.
func TestFaultKilledRankRdmarun(t *testing.T) {
	rdmarun := buildRdmarun(t)
	for _, victim := range faultVictims {
		t.Run("victim"+strconv.Itoa(victim), func(t *testing.T) {
			for rep := range faultReps(t) {
				ctx := testutils.Deadline(t, 2*time.Minute)
				cmd := exec.CommandContext(ctx, rdmarun, "-np", strconv.Itoa(faultRanks), "-keep-going",
					os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), testutils.EnvRole+"=fault",
					envFaultVictim+"="+strconv.Itoa(victim), "GORACE=atexit_sleep_ms=50")
				var out lockedBuffer
				cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, logLines(t, "")), io.MultiWriter(&out, logLines(t, ""))
				err := cmd.Run()
				code := -1
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err == nil {
					code = 0
				}
				if code != killedExit {
					t.Errorf("rdmarun exited with %d (%v), want %d: the killed rank's code", code, err, killedExit)
				}
				report := fmt.Sprintf("rank %d exited with code %d; the others run on (-keep-going)", victim, killedExit)
				if !strings.Contains(out.String(), report) {
					t.Errorf("rdmarun's output lacks %q", report)
				}
				for r := range faultRanks {
					if r != victim && !strings.Contains(out.String(), fmt.Sprintf("[%d] rank %d: survived", r, r)) {
						t.Errorf("rank %d did not report its survival", r)
					}
				}
				if t.Failed() {
					t.Fatalf("repetition %d failed", rep)
				}
			}
		})
	}
}

// TestFaultKilledRankByHand: the ranks are started by this test as a
// scheduler would start them, with no launcher: RDMACTOR_RANK,
// RDMACTOR_WORLD_SIZE, RDMACTOR_BOOTSTRAP, RDMACTOR_JOB_SECRET and
// RDMACTOR_JOB set by hand (internal/bootstrap reads them).
func TestFaultKilledRankByHand(t *testing.T) {
	for _, victim := range faultVictims {
		t.Run("victim"+strconv.Itoa(victim), func(t *testing.T) {
			for rep := range faultReps(t) {
				codes, errs := runByHand(t, faultRanks, "fault", envFaultVictim+"="+strconv.Itoa(victim))
				checkFaultExits(t, victim, codes, errs)
				if t.Failed() {
					t.Fatalf("repetition %d failed", rep)
				}
			}
		})
	}
}

// roleFault: every rank has an actor "echo"; the victim also has "silent"
// and "idle", which never answer. The other ranks watch those three and
// send requests that wait on "silent". Then, with requests crossing
// between every pair, the victim kills itself (SIGKILL). The survivors
// must: learn of the loss; fail every request pending towards the victim
// within pendingLimit of that; get exactly one Terminated per watched
// actor; fail later sends to it at once; and go on asking each other for
// faultTraffic with no error. With rank 0 lost, control-plane
// collectives fail (not hang) and Shrink fails with gin.ErrRankZeroLost.
func roleFault() error {
	victim, err := strconv.Atoi(os.Getenv(envFaultVictim))
	if err != nil {
		return fmt.Errorf("%s: %w", envFaultVictim, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	n, err := actor.Init(ctx, actor.Config{})
	if err != nil {
		return err
	}
	if _, err := n.SpawnNamed(actor.PropsFromFunc(echo), "echo"); err != nil {
		return err
	}
	watched := []string{"echo", "silent", "idle"}
	if n.Rank() == victim {
		for _, name := range watched[1:] {
			if _, err := n.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), name); err != nil {
				return err
			}
		}
	}
	var terminatedMu sync.Mutex
	terminated := map[string]int{}
	var unexpected []*actor.Terminated
	allTerminated := make(chan struct{}, 16)
	watcher := spawnWatcher(n, func(m *actor.Terminated) {
		terminatedMu.Lock()
		if m.Why != actor.TerminatedAddressTerminated || m.Who.Address != actor.AddressOf(victim) {
			unexpected = append(unexpected, m)
			terminatedMu.Unlock()
			return
		}
		terminated[m.Who.Id]++
		all := len(terminated) == len(watched)
		terminatedMu.Unlock()
		if all {
			allTerminated <- struct{}{}
		}
	})
	if err := n.Barrier(ctx); err != nil { // every actor is spawned
		return err
	}
	if n.Rank() != victim {
		for _, name := range watched {
			if _, err := n.Root().RequestFuture(watcher, n.PID(victim, name), 10*time.Second).Result(); err != nil {
				return err
			}
		}
	}
	if err := n.Barrier(ctx); err != nil { // every watch is recorded
		return err
	}

	f := &faultRun{n: n, victim: victim, stop: make(chan struct{})}
	f.start()
	if n.Rank() == victim {
		time.Sleep(300 * time.Millisecond) // mid-traffic
		signalSelf(syscall.SIGKILL)
	}
	detected, err := f.waitDetection(ctx)
	if err != nil {
		return err
	}
	phase := func(what string) { // where a rank that ends without a word got to
		fmt.Fprintf(os.Stderr, "rank %d: %s %v after the detection\n", n.Rank(), what, time.Since(detected).Round(time.Millisecond))
	}
	phase("pending requests checked")
	select {
	case <-allTerminated:
	case <-time.After(5 * time.Second):
		terminatedMu.Lock()
		defer terminatedMu.Unlock()
		return fmt.Errorf("Terminated within 5 s of the loss for %v, want each of %v", terminated, watched)
	}
	phase("Terminated checked")
	if err := f.checkLater(ctx); err != nil {
		return err
	}
	phase("later requests checked")
	time.Sleep(time.Until(detected.Add(faultTraffic)))
	close(f.stop)
	f.wg.Wait()
	phase("traffic stopped")
	if err := f.err(); err != nil {
		return err
	}
	terminatedMu.Lock()
	if len(unexpected) > 0 {
		terminatedMu.Unlock()
		return fmt.Errorf("Terminated other than AddressTerminated of rank %d's actors: %v", victim, unexpected)
	}
	for _, name := range watched {
		if terminated[name] != 1 {
			terminatedMu.Unlock()
			return fmt.Errorf("%d Terminated for rank %d's %s, want exactly 1 (all: %v)", terminated[name], victim, name, terminated)
		}
	}
	terminatedMu.Unlock()
	time.Sleep(time.Second) // the other survivors may still ask this one
	phase("closing")
	start := time.Now()
	if err := n.Close(); err != nil {
		return err
	}
	fmt.Printf("rank %d: survived rank %d's kill: %d requests among survivors after the loss, no error; %d pending requests failed <= %v after detection, checked against %v (goroutines or threads waited up to %v to run); Close %v\n",
		n.Rank(), victim, f.after.Load(), f.checked, f.latest.Round(time.Microsecond), f.pendingLimit(), f.waited.Round(time.Microsecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// faultRun is a survivor's traffic during a fault test.
type faultRun struct {
	n      *actor.Node
	victim int
	stop   chan struct{}
	wg     sync.WaitGroup

	detectedAt atomic.Pointer[time.Time]
	after      atomic.Int64 // requests among survivors answered after detection

	mu     sync.Mutex
	errs   []error
	toLost []request // requests towards the victim that failed

	sched    *metrics.Float64Histogram // the goroutines' scheduling delays when the traffic started
	runDelay map[string]time.Duration  // the threads' waits for a processor at the detection
	silent   []*actor.Future           // requests to the victim's "silent", which only the loss ends
	named    chan request              // Node.Requests to the victim's "silent": ErrRankGone when they end
	inflight atomic.Pointer[inflight]  // the request to the victim's "echo" in flight
	checked  int                       // requests pending at the detection
	latest   time.Duration             // the latest one of them failed after the detection
	waited   time.Duration             // the longest a goroutine waited to run, by then
}

// inflight is a request and when it was sent.
type inflight struct {
	start time.Time
	f     *actor.Future
}

type request struct {
	start, end time.Time
	err        error
}

func (f *faultRun) fail(err error) {
	f.mu.Lock()
	f.errs = append(f.errs, err)
	f.mu.Unlock()
}

func (f *faultRun) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

// start starts the traffic: on every rank, two goroutines asking every
// other rank but the victim, and one asking the victim; on the survivors,
// requests to the victim's "silent", which only the loss can end.
func (f *faultRun) start() {
	n := f.n
	f.sched = schedLatencies()
	if n.Rank() != f.victim {
		for range 8 {
			f.silent = append(f.silent, n.Root().RequestFuture(n.PID(f.victim, "silent"), &ping{}, 30*time.Second))
		}
		f.named = make(chan request, namedRequests)
		for range namedRequests {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				start := time.Now()
				_, err := n.Request(ctx, n.PID(f.victim, "silent"), &ping{})
				f.named <- request{start, time.Now(), err}
			}()
		}
	}
	for g := range 2 {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for round := 0; ; round++ {
				for to := range n.Size() {
					if to == f.victim || to == n.Rank() {
						continue
					}
					select {
					case <-f.stop:
						return
					default:
					}
					res, err := n.Root().RequestFuture(n.PID(to, "echo"), &ping{N: round}, 10*time.Second).Result()
					if err != nil {
						f.fail(fmt.Errorf("goroutine %d, round %d: request to rank %d: %w", g, round, to, err))
						return
					}
					if p := res.(*pong); p.N != round+1 {
						f.fail(fmt.Errorf("goroutine %d, round %d: rank %d answered %d", g, round, to, p.N))
						return
					}
					if f.detectedAt.Load() != nil {
						f.after.Add(1)
					}
				}
			}
		}()
	}
	if n.Rank() == f.victim {
		return
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			select {
			case <-f.stop:
				return
			default:
			}
			if d := f.detectedAt.Load(); d != nil {
				if time.Since(*d) > 500*time.Millisecond {
					return // enough: every later one fails at once alike
				}
				time.Sleep(50 * time.Millisecond) // fewer warnings of messages not delivered
			}
			start := time.Now()
			fu := n.Root().RequestFuture(n.PID(f.victim, "echo"), &ping{}, 10*time.Second)
			f.inflight.Store(&inflight{start, fu})
			_, err := fu.Result()
			if err != nil {
				f.mu.Lock()
				f.toLost = append(f.toLost, request{start, time.Now(), err})
				f.mu.Unlock()
			}
		}
	}()
}

// namedRequests is how many Node.Requests each survivor keeps pending
// towards the victim.
const namedRequests = 4

// waitDetection waits until the node knows the victim gone (polled every
// 100 µs) and returns when that was first seen. Then, in this goroutine
// (so that no goroutine's wake-up delay enters the figure), it waits for
// every request pending towards the victim at that moment, which must
// have failed within pendingLimit: futures with ErrDeadLetter (all a
// protoactor-go Future can fail with), Node.Requests with ErrRankGone.
func (f *faultRun) waitDetection(ctx context.Context) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for f.n.Gone(f.victim) == nil {
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("rank %d's loss not known within 20 s: %w", f.victim, ctx.Err())
		case <-time.After(100 * time.Microsecond):
		}
	}
	detected := time.Now()
	f.detectedAt.Store(&detected)
	f.runDelay = threadRunDelays()
	if err := f.n.Gone(f.victim); !errors.Is(err, actor.ErrRankGone) {
		return detected, fmt.Errorf("Gone(%d) = %v, want ErrRankGone", f.victim, err)
	}
	pending := f.silent
	if in := f.inflight.Load(); in != nil && in.start.Before(detected) {
		pending = append(pending, in.f)
	}
	for i, fu := range pending {
		_, err := fu.Result() // bounded by the request's own timeout
		late := time.Since(detected)
		if !errors.Is(err, actor.ErrDeadLetter) {
			return detected, fmt.Errorf("request %d pending towards the lost rank ended with %v after %v, want ErrDeadLetter", i, err, late)
		}
		f.latest = max(f.latest, late)
	}
	for i := range namedRequests {
		var r request
		select {
		case r = <-f.named:
		case <-ctx.Done():
			return detected, fmt.Errorf("Node.Request %d pending towards the lost rank did not end: %w", i, ctx.Err())
		}
		if !errors.Is(r.err, actor.ErrRankGone) {
			return detected, fmt.Errorf("Node.Request %d pending towards the lost rank ended with %v, want ErrRankGone", i, r.err)
		}
		f.latest = max(f.latest, r.end.Sub(detected))
	}
	f.checked = len(pending) + namedRequests
	// The longer of a goroutine's wait to run and a thread's wait for a
	// processor: on a host with more runnable threads than cores the
	// kernel may hold the thread failing the requests.
	f.waited = max(worstSince(f.sched, schedLatencies()), worstRunDelaySince(f.runDelay))
	if limit := f.pendingLimit(); f.latest > limit {
		return detected, fmt.Errorf("requests pending towards the lost rank failed up to %v after the loss was known, want <= %v (goroutines or threads waited up to %v to run)",
			f.latest, limit, f.waited)
	}
	return detected, nil
}

// pendingLimit is pendingLimit where this rank's goroutines ran when
// they could (the longest wait to run seen at most pendingLimit/4), and
// laterLimit on a host too loaded to tell 100 ms apart.
func (f *faultRun) pendingLimit() time.Duration {
	if f.waited > pendingLimit/4 {
		return laterLimit
	}
	return pendingLimit
}

// The node fails the pending requests as it learns of the loss, but on a
// loaded host (CI runs test binaries side by side on few cores, each rank
// here runs traffic goroutines, and -race slows them) the goroutine doing
// so can be preempted, several times, and wait to run again for longer
// than pendingLimit in all. The Go runtime measures such waits
// (/sched/latencies:seconds, the time goroutines spent runnable before
// running, sampled); where they reach a quarter of pendingLimit, the
// 100 ms cannot be told from the host's delays, and the test checks
// laterLimit instead (and says so). On an unloaded host they stay a few ms.

// schedLatencies reads the runtime's histogram of scheduling delays.
func schedLatencies() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// worstSince returns the upper bound of the highest bucket of after that
// gained counts since before.
func worstSince(before, after *metrics.Float64Histogram) time.Duration {
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if i < len(before.Counts) && after.Counts[i] == before.Counts[i] {
			continue
		}
		hi := after.Buckets[i+1]
		if math.IsInf(hi, 1) {
			hi = after.Buckets[i]
		}
		return time.Duration(hi * float64(time.Second))
	}
	return 0
}

// checkLater checks the requests and sends to the victim after the
// detection: each failed at once (laterLimit), and a send now fails at
// once with ErrRankGone. With rank 0
// lost, a Barrier fails and Shrink fails with gin.ErrRankZeroLost.
func (f *faultRun) checkLater(ctx context.Context) error {
	n := f.n
	detected := *f.detectedAt.Load()
	time.Sleep(600 * time.Millisecond) // the goroutine asking the victim stops
	f.mu.Lock()
	for _, r := range f.toLost {
		if !r.start.Before(detected) && r.end.Sub(r.start) > laterLimit {
			f.mu.Unlock()
			return fmt.Errorf("a request to the lost rank sent %v after the detection failed after %v, want at once (<= %v): %v", r.start.Sub(detected), r.end.Sub(r.start), laterLimit, r.err)
		}
	}
	f.mu.Unlock()
	start := time.Now()
	if err := n.Tell(n.PID(f.victim, "echo"), &ping{}); !errors.Is(err, actor.ErrRankGone) || time.Since(start) > laterLimit {
		return fmt.Errorf("Tell to the lost rank: %v after %v, want ErrRankGone at once", err, time.Since(start))
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := n.Barrier(bctx); !errors.Is(err, gin.ErrPeerLost) {
		return fmt.Errorf("Barrier after the loss: %v, want ErrPeerLost", err)
	}
	if f.victim == 0 {
		if _, err := n.Comm().Shrink(bctx); !errors.Is(err, gin.ErrRankZeroLost) {
			return fmt.Errorf("Shrink after rank 0's loss: %v, want ErrRankZeroLost", err)
		}
	}
	return nil
}

// signalSelf sends sig to this process; for SIGKILL, as kill -9 would: no
// deferred call, no Close, no goodbye.
func signalSelf(sig syscall.Signal) {
	_ = syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Minute) // the signal is on its way
}

// runByHand starts np ranks of this test binary running role, as a
// scheduler would: the RDMACTOR_* variables set by hand, no launcher. It
// returns their exit codes (128+n when killed by signal n) and errors, by
// rank, and removes the job's shared-memory files.
func runByHand(t *testing.T, np int, role string, env ...string) ([]int, []error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var secret, id [16]byte
	_, _ = rand.Read(secret[:])
	_, _ = rand.Read(id[:])
	job := "fault" + hex.EncodeToString(id[:6])
	ctx := testutils.Deadline(t, 2*time.Minute)
	cmds := make([]*exec.Cmd, np)
	for r := range cmds {
		c := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), env...)
		c.Env = append(c.Env,
			"RDMACTOR_RANK="+strconv.Itoa(r),
			"RDMACTOR_WORLD_SIZE="+strconv.Itoa(np),
			"RDMACTOR_BOOTSTRAP="+addr,
			"RDMACTOR_JOB_SECRET="+hex.EncodeToString(secret[:]),
			"RDMACTOR_JOB="+job,
			"RDMACTOR_TRANSPORT=shm",
			testutils.EnvRole+"="+role,
			"GORACE=atexit_sleep_ms=50",
		)
		w := logLines(t, fmt.Sprintf("[%d] ", r))
		c.Stdout, c.Stderr = w, w
		// A rank still running at the deadline dumps its goroutines
		// (SIGQUIT) into the log, where a hang shows, before the kill.
		c.Cancel = func() error { return c.Process.Signal(syscall.SIGQUIT) }
		c.WaitDelay = 10 * time.Second
		cmds[r] = c
	}
	codes, errs := make([]int, np), make([]error, np)
	for r, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:r] {
				_ = s.Process.Kill()
				_ = s.Wait()
			}
			t.Fatalf("start rank %d: %v", r, err)
		}
	}
	for r, c := range cmds {
		errs[r] = c.Wait()
		codes[r] = c.ProcessState.ExitCode()
		if ws, ok := c.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			codes[r] = 128 + int(ws.Signal())
		}
	}
	if err := shm.Cleanup(job); err != nil {
		t.Errorf("cleanup of job %s: %v", job, err)
	}
	return codes, errs
}

// buildRdmarun builds cmd/rdmarun into a temporary directory of t.
func buildRdmarun(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "rdmarun")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/rdmarun")
	cmd.Dir = strings.TrimSpace(string(root))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/rdmarun: %v\n%s", err, out)
	}
	return bin
}

// logLines returns a writer that logs each line written to it, prefixed.
func logLines(t *testing.T, prefix string) io.Writer {
	r, w := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t.Log(prefix + sc.Text())
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	t.Cleanup(func() { w.Close(); <-done })
	return w
}

// lockedBuffer is a strings.Builder safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
