package launch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// outputGrace is how long Run waits, after every rank exited, for the rest of
// their output before it stops reading.
const outputGrace = 2 * time.Second

// job is one Run: its ranks, their output forwarders, and the kill logic.
type job struct {
	o     *Options
	procs []*rankProc // started ranks, by local rank
	exits chan int    // local ranks as they exit
	outMu sync.Mutex  // serializes writes to o.Stdout and o.Stderr
	fwd   sync.WaitGroup

	stopOnce sync.Once
	allDone  chan struct{} // closed when every started rank exited
}

func newJob(o *Options) *job {
	return &job{o: o, exits: make(chan int, o.NP), allDone: make(chan struct{})}
}

// start starts the ranks in order; it stops at the first that fails to start.
func (j *job) start(env []string) error {
	for local := range j.o.NP {
		r := j.o.RankBase + local
		renv := append(env[:len(env):len(env)], EnvRank+"="+strconv.Itoa(r), EnvLocalRank+"="+strconv.Itoa(local))
		var cpus []int
		if j.o.CPUs != nil {
			cpus = j.o.CPUs[local]
		}
		p, err := startRank(r, j.o.Prog, j.o.Args, renv, cpus)
		if err != nil {
			return fmt.Errorf("launch: start rank %d: %w", r, err)
		}
		j.procs = append(j.procs, p)
		prefix := "[" + strconv.Itoa(r) + "] "
		j.fwd.Add(2)
		go func() { defer j.fwd.Done(); forward(p.outR, j.o.Stdout, &j.outMu, prefix) }()
		go func() { defer j.fwd.Done(); forward(p.errR, j.o.Stderr, &j.outMu, prefix) }()
		go func() { p.wait(); j.exits <- local }()
	}
	return nil
}

// wait waits for every started rank, killing them all on a failure (with
// KillOnFailure), on timeout, on ctx's end, or when startErr is set; then it
// drains the output. It returns Run's error, before cleanup.
func (j *job) wait(ctx context.Context, startErr error) error {
	var timeout <-chan time.Time
	if j.o.Timeout > 0 {
		t := time.NewTimer(j.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	stopErr := startErr
	if startErr != nil {
		j.stop()
	}
	var first *RankError
	done := ctx.Done()
	for left := len(j.procs); left > 0; {
		select {
		case local := <-j.exits:
			left--
			res := j.procs[local].res
			if j.o.OnExit != nil {
				j.o.OnExit(res)
			}
			if res.ExitCode != 0 && first == nil && stopErr == nil {
				first = &RankError{Rank: res.Rank, ExitCode: res.ExitCode, Err: res.Err}
				if j.o.KillOnFailure {
					j.stop()
				}
			}
		case <-timeout:
			timeout = nil
			if stopErr == nil && first == nil {
				stopErr = fmt.Errorf("%w after %v", ErrTimeout, j.o.Timeout)
			}
			j.stopWith(j.overdue(true))
		case <-done:
			done = nil
			if stopErr == nil && first == nil {
				stopErr = fmt.Errorf("launch: %w", context.Cause(ctx))
			}
			j.stopWith(j.overdue(errors.Is(ctx.Err(), context.DeadlineExceeded)))
		}
	}
	close(j.allDone)
	j.drain()
	if first != nil {
		return fmt.Errorf("launch: %w", first)
	}
	return stopErr
}

// stop terminates every running rank: SIGTERM now, SIGKILL after KillGrace.
func (j *job) stop() { j.stopWith(sigTerm) }

// overdue is the first signal of a job stopped for its time (timedOut):
// SIGQUIT with Options.DumpOnTimeout, else SIGTERM.
func (j *job) overdue(timedOut bool) stopSignal {
	if timedOut && j.o.DumpOnTimeout {
		return sigQuit
	}
	return sigTerm
}

// stopWith is stop with first signal s instead of SIGTERM.
func (j *job) stopWith(s stopSignal) {
	j.stopOnce.Do(func() {
		for _, p := range j.procs {
			p.signal(s)
		}
		go func() {
			select {
			case <-time.After(KillGrace):
				for _, p := range j.procs {
					p.kill()
				}
			case <-j.allDone:
			}
		}()
	})
}

// drain waits for the forwarders to reach the end of the output, for at most
// outputGrace, then closes the pipes.
func (j *job) drain() {
	done := make(chan struct{})
	go func() { j.fwd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(outputGrace):
	}
	for _, p := range j.procs {
		p.closeOutput()
	}
	<-done
}

// results returns one Result per local rank, -1 for ranks never started.
func (j *job) results() []Result {
	res := make([]Result, j.o.NP)
	for i := range res {
		if i < len(j.procs) {
			res[i] = j.procs[i].res
		} else {
			res[i] = Result{Rank: j.o.RankBase + i, ExitCode: -1, Err: errNotStarted}
		}
	}
	return res
}
