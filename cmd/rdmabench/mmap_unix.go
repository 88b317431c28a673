//go:build unix

package main

// This file owns the benchmark's system calls: the floor's shared file,
// created by rank 0 in /dev/shm, mapped MAP_SHARED by both ranks, and
// unlinked once both have mapped it.

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// mapShared maps n bytes of the file at path read-write and shared. With
// create, the file is created exclusively (a stale one of the same name is
// removed first) and sized to n bytes of zeros.
func mapShared(path string, n int, create bool) ([]byte, error) {
	flags := unix.O_RDWR | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if create {
		_ = unix.Unlink(path)
		flags |= unix.O_CREAT | unix.O_EXCL
	}
	fd, err := unix.Open(path, flags, 0o600)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if create {
		if err := unix.Ftruncate(fd, int64(n)); err != nil {
			return nil, &os.PathError{Op: "ftruncate", Path: path, Err: err}
		}
	} else {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return nil, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		if st.Size < int64(n) {
			return nil, fmt.Errorf("%s: %d bytes, want %d", path, st.Size, n)
		}
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return mem, nil
}

func unmap(mem []byte) error { return unix.Munmap(mem) }

func unlink(path string) error { return unix.Unlink(path) }
