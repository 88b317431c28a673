//go:build linux

package shm

// This file owns every system call of the package: creating, opening,
// sizing, mapping and unmapping the shared-memory files that back exported
// regions. The rest of the package sees []byte views only; atomic word views
// come from internal/memword, the single unsafe conversion.
//
// One exported region is one file, /dev/shm/rdmactor-<job>-r<rank>-<seq>
// (os.TempDir() where /dev/shm is missing), created by its owner and mapped
// MAP_SHARED by the owner and by every importer:
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
	"fmt"
	"math"
	"os"

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

// openFile opens an existing region file for mapping n bytes. It refuses a
// symbolic link, a file that is not regular, a file owned by another user,
// and a file shorter than n (touching a page past the end would SIGBUS).
func openFile(path string, n int) (int, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = fmt.Errorf("not a regular file")
	case int(st.Uid) != os.Geteuid():
		err = fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Geteuid())
	case st.Size < int64(n):
		err = fmt.Errorf("file has %d bytes, descriptor needs %d", st.Size, n)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
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

// closeFD closes a file descriptor opened by createFile or openFile.
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
