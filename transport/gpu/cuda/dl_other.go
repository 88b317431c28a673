//go:build !linux

package cuda

import (
	"errors"
	"runtime"
)

// dlopen fails: the GPU transport runs where NVIDIA's Linux driver does.
func dlopen(path string) (uintptr, error) {
	return 0, errors.New(path + ": the CUDA driver is loaded on linux only, not " + runtime.GOOS)
}

func bind(uintptr, symbol) error { return errors.New("not linux") }
