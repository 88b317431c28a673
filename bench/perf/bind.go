package perf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/rdmactor/rdmactor/gin"
)

// BindModes are the values of the examples' -bind flag.
const BindModes = "auto, core or none"

// Bind applies a -bind mode to this process, a rank of a launcher job
// (RDMACTOR_RANK, RDMACTOR_WORLD_SIZE): core pins it to one CPU
// (BindCPU(rank)); none leaves it; auto pins when the job's ranks fit the
// CPUs and leaves it otherwise, as mpirun binds to cores by default and not
// when oversubscribed, and leaves a rank the launcher bound already
// (rdmarun -bind, mpirun --bind-to core: it may run on fewer processors
// than the host has online). Goroutine ranks (local) are never bound. It
// returns what it did, for the header line.
func Bind(mode string, local bool) (string, error) {
	rank, err1 := strconv.Atoi(os.Getenv(gin.EnvRank))
	size, err2 := strconv.Atoi(os.Getenv(gin.EnvSize))
	switch {
	case mode != "auto" && mode != "core" && mode != "none":
		return "", fmt.Errorf("bind mode %q: want %s", mode, BindModes)
	case mode == "none" || local:
		return "unbound", nil
	case mode == "auto" && runtime.NumCPU() < onlineCPUs():
		return fmt.Sprintf("bound by the launcher (%d CPUs)", runtime.NumCPU()), nil
	case err1 != nil || err2 != nil:
		return "unbound", nil
	case mode == "auto" && size > runtime.NumCPU():
		return "unbound (oversubscribed)", nil
	}
	cpu, err := BindCPU(rank)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("bound to CPU %d", cpu), nil
}
