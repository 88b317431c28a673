package launch

import "syscall"

// setParentDeathSignal kills the rank if the launcher dies (prctl
// PR_SET_PDEATHSIG; strictly, when the launcher's thread that started it
// exits, which the Go runtime does not do to its threads in practice).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
