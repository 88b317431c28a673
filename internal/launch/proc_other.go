//go:build !unix

package launch

import (
	"os"
	"os/exec"
)

// setProcAttr does nothing: no process groups here.
func setProcAttr(*exec.Cmd) {}

// killGroup kills only the rank's process (no groups, no SIGTERM here).
func killGroup(p *os.Process, _ stopSignal) { _ = p.Kill() }

// signalCode returns 1: no signals here.
func signalCode(*exec.ExitError) int { return 1 }

// openFileLimit is unknown here.
func openFileLimit() (int, bool) { return 0, false }
