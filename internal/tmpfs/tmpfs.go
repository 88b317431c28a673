// Package tmpfs says where this host's shared-memory files live, so that
// the shm provider's regions and the benchmarks' shared files agree.
package tmpfs

import "os"

// Dir is the directory for files that processes of the host map shared:
// /dev/shm (tmpfs, never written back to disk), else os.TempDir().
func Dir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}
