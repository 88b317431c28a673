package launch

import (
	"errors"
	"os"
	"os/exec"
	"sync"
)

var errNotStarted = errors.New("not started")

// rankProc is one started rank.
type rankProc struct {
	rank       int // its rank in the job (RankBase + local rank)
	cmd        *exec.Cmd
	outR, errR *os.File // read ends of its stdout and stderr
	res        Result   // set by wait before the rank is reported exited

	mu     sync.Mutex
	reaped bool // Wait returned: the pid may be reused, never signal it again
}

// startRank starts prog with its own process group and stdout/stderr
// pipes, bound to cpus if any (startBound).
func startRank(rank int, prog string, args, env []string, cpus []int) (*rankProc, error) {
	cmd := exec.Command(prog, args...)
	cmd.Env = env
	setProcAttr(cmd)
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = startBound(cmd, cpus)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	return &rankProc{rank: rank, cmd: cmd, outR: outR, errR: errR}, nil
}

// wait waits for the rank, records its result and kills what is left of its
// process group.
func (p *rankProc) wait() {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	killGroup(p.cmd.Process, sigKill)
	p.res = Result{Rank: p.rank}
	if err != nil {
		p.res.Err = err
		p.res.ExitCode = exitCode(err)
	}
}

// kill kills the rank's process group (SIGKILL).
func (p *rankProc) kill() { p.signal(sigKill) }

// stopSignal is how a rank is asked to end: SIGTERM, SIGQUIT (dump the
// stacks, then end) or SIGKILL.
type stopSignal int

const (
	sigTerm stopSignal = iota
	sigQuit
	sigKill
)

// signal sends s to the rank's process group unless it was reaped.
func (p *rankProc) signal(s stopSignal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		killGroup(p.cmd.Process, s)
	}
}

// closeOutput closes the read ends of the rank's pipes, ending forwarders.
func (p *rankProc) closeOutput() {
	p.outR.Close()
	p.errR.Close()
}

// exitCode returns the exit status in err, 128+n for signal n, else -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if c := ee.ExitCode(); c >= 0 {
		return c
	}
	return signalCode(ee)
}
