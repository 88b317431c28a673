//go:build linux

package shm

// This file owns every system call of the package: creating, opening,
// sizing, mapping and unmapping the shared-memory files that back exported
// regions. The rest of the package sees []byte views only; atomic word views
// come from internal/memword, the single unsafe conversion.
//
// One exported region is one tmpfs file, created by its owner and mapped
// MAP_SHARED by the owner and by every importer. By default (EnvFiles) it
// is a memfd_create(2) file named rdmactor-<job>-r<rank>-<seq> that lives
// in no directory: the owner keeps its descriptor open until the region's
// Close, peers open it as /proc/<owner pid>/fd/<fd>, and the kernel frees
// the pages with the last descriptor or mapping, so a killed rank leaves
// nothing. In named mode it is the file /dev/shm/rdmactor-<job>-r<rank>-<seq>
// (os.TempDir() where /dev/shm is missing), which peers open by name and
// Unlink, Close or Cleanup remove. Both have this layout:
//
//	file offset 0                      size                  mapLen-64   mapLen
//	            +--------------------------+----------------------+-----------+
//	            | Region.Bytes(): the      | zero pad              | doorbell  |
//	            | window (signals, mode    |                       | seq  @+0  |
//	            | words, data at offsets   |                       | wait @+32 |
//	            | gin chooses)             |                       | (uint32)  |
//	            +--------------------------+----------------------+-----------+
//	mapLen = size + 64 rounded up to the page size. The file is ftruncate'd
//	to mapLen, so every mapped page is backed: no SIGBUS on the pad. The
//	last 64 bytes are the region's doorbell (internal/futex): a put that
//	adds to a signal word of the region rings it, and the owner blocks on
//	it (Region.Doorbell). Peers reach it through their own mapping of the
//	same file.
//
// The page-aligned mapping makes every 8-byte aligned offset an 8-byte
// aligned address, which the atomic signal words need.

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/internal/tmpfs"
)

// shmDir is where exported regions' files live (tmpfs.Dir).
func shmDir() string { return tmpfs.Dir() }

// bellBytes is the doorbell's line at the end of every mapping.
const bellBytes = 64

// mapLen returns the length mapped for a region of size bytes: the window
// and the doorbell line, rounded up to the page size.
func mapLen(size int) (int, error) {
	page := os.Getpagesize()
	if size < 0 || size > math.MaxInt-2*page {
		return 0, fmt.Errorf("region size %d: invalid", size)
	}
	return (size + bellBytes + page - 1) / page * page, nil
}

// createFile creates path exclusively (never reusing or following an existing
// name: /dev/shm is shared by every user of the host) and sizes it to n bytes
// of zeros. It returns the open descriptor.
func createFile(path string, n int) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, &os.PathError{Op: "create", Path: path, Err: err}
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		_ = unix.Close(fd)
		_ = unix.Unlink(path)
		return -1, &os.PathError{Op: "ftruncate", Path: path, Err: err}
	}
	return fd, nil
}

// createMemfd creates a memfd named name (what /proc/<pid>/fd/<fd> shows),
// mode 0600, sized to n bytes of zeros. It returns the open descriptor;
// the file has no name in any directory and goes with its last reference.
func createMemfd(name string, n int) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("memfd_create %s: %w (%s=named shares named files instead)", name, err, EnvFiles)
	}
	// Peers open it through /proc, which checks these bits too.
	if err := unix.Fchmod(fd, 0o600); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("fchmod memfd %s: %w", name, err)
	}
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("ftruncate memfd %s: %w", name, err)
	}
	return fd, nil
}

// openFile opens an existing region file for mapping n bytes. It refuses a
// symbolic link, a file that is not regular, a file owned by another user,
// and a file shorter than n (touching a page past the end would SIGBUS).
func openFile(path string, n int) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	if err := checkFile(fd, n); err != nil {
		_ = unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// openMemfd opens the memfd named name that process pid holds as fd, for
// mapping n bytes; rank is its owner's rank, for errors. /proc/<pid>/fd/<fd>
// is a magic link (O_NOFOLLOW would refuse it), so the link's target must
// be that memfd's, before the open (nothing else of the process, such as a
// device, is opened) and again on the descriptor opened (the owner may
// have closed fd and reused the number meanwhile). Then the checks of
// openFile apply. A process that has exited, or a fd it no longer holds,
// is an error wrapping ErrOwnerGone.
func openMemfd(rank, pid, fd int, name string, n int) (int, error) {
	path := procFDPath(pid, fd)
	want := memfdTarget(name)
	target, err := os.Readlink(path)
	if err != nil {
		return -1, ownerGone(rank, pid, fd, name, err)
	}
	if target != want {
		return -1, fmt.Errorf("%s is %q, not rank %d's region %q: %w (pid %d is another process now, or the region was closed)",
			path, target, rank, name, ErrOwnerGone, pid)
	}
	ofd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, ownerGone(rank, pid, fd, name, err)
	}
	if target, err = os.Readlink(procFDPath(os.Getpid(), ofd)); err == nil && target != want {
		err = fmt.Errorf("opened %q, not rank %d's region %q: %w (the region was closed meanwhile)", target, rank, name, ErrOwnerGone)
	}
	if err == nil {
		err = checkFile(ofd, n)
	}
	if err != nil {
		_ = unix.Close(ofd)
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return ofd, nil
}

// ownerGone explains why /proc/<pid>/fd/<fd> could not be read or opened.
func ownerGone(rank, pid, fd int, name string, err error) error {
	path := procFDPath(pid, fd)
	var st unix.Stat_t
	if serr := unix.Stat("/proc/"+strconv.Itoa(pid), &st); serr == unix.ENOENT {
		return fmt.Errorf("open %s (rank %d's region %s): %w: process %d has exited, or runs in another PID namespace (then set %s=named): %w",
			path, rank, name, ErrOwnerGone, pid, EnvFiles, err)
	}
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("open %s (rank %d's region %s): %w: process %d holds no fd %d (region closed, or the process is exiting): %w",
			path, rank, name, ErrOwnerGone, pid, fd, err)
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// checkFile refuses a file that is not regular, is owned by another user,
// or is shorter than n bytes.
func checkFile(fd, n int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("not a regular file")
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Geteuid())
	case st.Size < int64(n):
		return fmt.Errorf("file has %d bytes, descriptor needs %d", st.Size, n)
	}
	return nil
}

// mapShared maps n bytes of fd read-write and shared: stores are visible to
// every other mapping of the file, in this process or another.
func mapShared(fd, n int) ([]byte, error) {
	b, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", n, err)
	}
	return b, nil
}

// unmap releases a mapping returned by mapShared (the whole slice).
func unmap(b []byte) error {
	if b == nil {
		return nil
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

// closeFD closes a file descriptor opened by this file's functions.
func closeFD(fd int) error {
	if fd < 0 {
		return nil
	}
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("close fd %d: %w", fd, err)
	}
	return nil
}

// removeFile unlinks path; a file already gone (Cleanup, an earlier Unlink)
// is not an error.
func removeFile(path string) error {
	if err := unix.Unlink(path); err != nil && err != unix.ENOENT {
		return &os.PathError{Op: "unlink", Path: path, Err: err}
	}
	return nil
}
