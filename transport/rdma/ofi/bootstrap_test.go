//go:build ofi && cgo && linux

package ofi_test

// gin.Init's multi-process bootstrap for the process tests: gin registers
// none itself.
import _ "github.com/rdmactor/rdmactor/internal/bootstrap/remote"
