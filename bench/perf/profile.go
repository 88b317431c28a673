package perf

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/rdmactor/rdmactor/gin"
)

// StartCPUProfile starts a CPU profile into path, suffixed with this
// process's rank under the launcher (path.rank), and returns the function
// that stops it. An empty path does nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	if r := os.Getenv(gin.EnvRank); r != "" {
		if _, err := strconv.Atoi(r); err == nil {
			path += "." + r
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
