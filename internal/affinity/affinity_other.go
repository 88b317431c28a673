//go:build !linux

package affinity

import (
	"fmt"
	"runtime"
)

// Get fails here: only Linux has CPU affinity.
func Get() ([]int, error) { return nil, fmt.Errorf("%s: %w", runtime.GOOS, ErrUnsupported) }

// Set fails here: only Linux has CPU affinity.
func Set(int, []int) error { return fmt.Errorf("%s: %w", runtime.GOOS, ErrUnsupported) }
