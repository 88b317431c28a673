package gin

import (
	"math/bits"
	"runtime"

	"github.com/rdmactor/rdmactor/internal/affinity"
)

// maxCPUSetBytes bounds a rank's processor set in the host exchange: a
// bitmap of 65 536 processors.
const maxCPUSetBytes = 8 << 10

// hostCPUs is how many processors the ranks of one host may run on: the
// union of their affinity sets (sched_getaffinity(2)), so ranks that a
// launcher binds to cores of their own (mpirun's default --bind-to core
// for two ranks, Slurm's task/affinity, rdmarun -bind core) count every
// core they cover, while ranks confined together to fewer processors
// than they are count those alone. A rank whose set is unknown (another
// OS) makes it runtime.NumCPU.
func hostCPUs(sets [][]byte) int {
	var union []byte
	for _, s := range sets {
		if s == nil {
			return runtime.NumCPU()
		}
		if len(s) > len(union) {
			union = append(union, make([]byte, len(s)-len(union))...)
		}
		for i, b := range s {
			union[i] |= b
		}
	}
	n := 0
	for _, b := range union {
		n += bits.OnesCount8(b)
	}
	if n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// cpuSet is the processors this process may run on, as an affinity.Bitmap;
// nil where the OS does not say.
func cpuSet() []byte {
	cpus, err := affinity.Get()
	if err != nil {
		return nil
	}
	return affinity.Bitmap(cpus)
}
