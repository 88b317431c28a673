//go:build unix

package launch

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts the rank in a process group of its own.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// killGroup sends s (SIGTERM, SIGQUIT or SIGKILL) to the process group
// that p leads; a group already gone is not an error.
func killGroup(p *os.Process, s stopSignal) {
	sig := syscall.SIGTERM
	switch s {
	case sigQuit:
		sig = syscall.SIGQUIT
	case sigKill:
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.Pid, sig)
}

// signalCode returns 128+n for a process killed by signal n, else 1.
func signalCode(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return 1
}

// openFileLimit is the soft RLIMIT_NOFILE of this process.
func openFileLimit() (int, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0, false
	}
	return int(r.Cur), true
}
