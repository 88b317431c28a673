//go:build !race

package testutils

// Race reports whether the binary is built with the race detector.
const Race = false
