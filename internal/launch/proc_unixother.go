//go:build unix && !linux

package launch

import "syscall"

// setParentDeathSignal does nothing: only Linux has PR_SET_PDEATHSIG.
func setParentDeathSignal(*syscall.SysProcAttr) {}
