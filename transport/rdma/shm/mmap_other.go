//go:build !linux

package shm

// Stubs for platforms other than Linux: the package builds, and Open or
// RegisterMemory report rdma.ErrNotSupported (see mmap.go for the Linux
// implementation and the file layout).

import (
	"os"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// bellBytes matches mmap.go so that region.go builds; no mapping exists here.
const bellBytes = 64

var errNoShm = &rdma.UnsupportedError{Provider: "shm", Feature: "shared-memory regions on this OS (Linux only)"}

func shmDir() string { return os.TempDir() }

func mapLen(size int) (int, error)                      { return 0, errNoShm }
func createFile(string, int) (int, error)               { return -1, errNoShm }
func createMemfd(string, int) (int, error)              { return -1, errNoShm }
func openFile(string, int) (int, error)                 { return -1, errNoShm }
func openMemfd(int, int, int, string, int) (int, error) { return -1, errNoShm }
func mapShared(int, int) ([]byte, error)                { return nil, errNoShm }
func unmap([]byte) error                                { return nil }
func closeFD(int) error                                 { return nil }
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
