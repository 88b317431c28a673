//go:build linux

package cuda

import (
	"github.com/ebitengine/purego"
)

// dlopen opens a shared library with RTLD_NOW|RTLD_GLOBAL (dlopen(3)).
func dlopen(path string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, err // dlerror names the path
	}
	return h, nil
}

// bind points s's func variable at the C function s.name of library h.
func bind(h uintptr, s symbol) error {
	p, err := purego.Dlsym(h, s.name)
	if err != nil {
		return err
	}
	purego.RegisterFunc(s.fptr, p)
	return nil
}
