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

// fileName names region seq of rank in job, as a file in named mode and as
// a memfd: rdmactor-<job>-r<rank>-<seq>. At most 242 bytes, within both
// NAME_MAX (255) and memfd_create's 249.
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

// Cleanup removes every named-mode file of job from the shared-memory
// directory (/dev/shm/rdmactor-<job>-r<rank>-<seq>), whether its rank is
// alive or not. The launcher calls it once every rank has exited, so that
// ranks killed by SIGKILL leave nothing behind; tests call it too. memfd
// regions (the default, EnvFiles) have no file to remove.
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

// EnvFiles selects how a rank shares its exported regions, read by Open:
//
//   - "memfd" (the default, also when unset or empty): an anonymous
//     memfd_create(2) file that has no name in any directory, so no kill at
//     any moment leaves anything behind. Peers open it through
//     /proc/<owner pid>/fd/<fd>, which needs every rank of the host in one
//     PID namespace (and run by one user).
//   - "named": a file /dev/shm/rdmactor-<job>-r<rank>-<seq>, for ranks
//     that share /dev/shm but not a PID namespace (separate containers).
//     Unlink and Cleanup remove such files.
//
// The owner's setting decides: descriptors say which kind a region is and
// importers follow it, whatever their own setting.
const EnvFiles = "RDMACTOR_SHM_FILES"

// fileMode is how an exported region is shared; its values are the
// descriptor's files word.
type fileMode uint32

const (
	modeMemfd fileMode = 1 // memfd_create, imported through /proc/<pid>/fd/<fd>
	modeNamed fileMode = 2 // a file in the shm directory, imported by name
)

func (m fileMode) String() string {
	switch m {
	case modeMemfd:
		return "memfd"
	case modeNamed:
		return "named"
	}
	return "fileMode(" + strconv.FormatUint(uint64(m), 10) + ")"
}

// filesFromEnv reads EnvFiles; an unknown value is an error rather than a
// silent default, since the two modes differ in what a kill leaves behind.
func filesFromEnv() (fileMode, error) {
	switch v := strings.ToLower(strings.TrimSpace(os.Getenv(EnvFiles))); v {
	case "", "memfd":
		return modeMemfd, nil
	case "named":
		return modeNamed, nil
	default:
		return 0, fmt.Errorf("shm: %s=%q: want memfd or named", EnvFiles, v)
	}
}

// memfdTarget is what readlink(2) of /proc/<pid>/fd/<fd> shows for the
// memfd named name (memfd files are always unlinked).
func memfdTarget(name string) string { return "/memfd:" + name + " (deleted)" }

// procFDPath is the magic link through which a process of the same user
// (and PID namespace) opens fd of process pid.
func procFDPath(pid, fd int) string {
	return "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd)
}
