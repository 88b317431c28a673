package shm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// filePrefix starts the name of every file this package creates.
const filePrefix = "rdmactor-"

// maxJobLen bounds a job name so that file names stay under NAME_MAX (255).
const maxJobLen = 200

// checkJob reports whether job can name files: 1 to maxJobLen bytes of
// [A-Za-z0-9._-]. The rule keeps names inside the shm directory (no '/'),
// free of glob characters, and unambiguous (see parseFileName).
func checkJob(job string) error {
	if job == "" || len(job) > maxJobLen {
		return fmt.Errorf("shm: job name %q: want 1 to %d bytes", job, maxJobLen)
	}
	for i := 0; i < len(job); i++ {
		c := job[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("shm: job name %q: byte %q not in [A-Za-z0-9._-]", job, c)
		}
	}
	if job == "." || job == ".." {
		return fmt.Errorf("shm: job name %q: reserved", job)
	}
	return nil
}

// fileName is the base name of the file backing region seq of rank in job:
// rdmactor-<job>-r<rank>-<seq>.
func fileName(job string, rank int, seq uint64) string {
	return filePrefix + job + "-r" + strconv.Itoa(rank) + "-" + strconv.FormatUint(seq, 10)
}

// isJobFile reports whether base is a file name of job: the prefix
// "rdmactor-<job>-r" followed by exactly <digits>-<digits>. Job "a" thus
// never matches the files of job "a-b" ("rdmactor-a-b-r0-1") nor of job "a-r1".
func isJobFile(job, base string) bool {
	rest, ok := strings.CutPrefix(base, filePrefix+job+"-r")
	if !ok {
		return false
	}
	rank, seq, ok := strings.Cut(rest, "-")
	return ok && allDigits(rank) && allDigits(seq)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Cleanup removes every file of job from the shared-memory directory
// (/dev/shm/rdmactor-<job>-r<rank>-<seq>), whether its rank is alive or
// not. The launcher calls it once every rank has exited, so that ranks
// killed by SIGKILL leave nothing behind; tests call it too.
//
// Live mappings of removed files stay valid (only the names go). It returns
// an error for an invalid job name, and the joined errors of files it could
// not remove; files that vanish meanwhile are not errors.
func Cleanup(job string) error {
	if err := checkJob(job); err != nil {
		return err
	}
	dir := shmDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("shm: cleanup %s: %w", job, err)
	}
	var errs []error
	for _, e := range entries {
		if e.Type().IsRegular() && isJobFile(job, e.Name()) {
			if err := removeFile(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shm: cleanup %s: %w", job, err)
	}
	return nil
}
