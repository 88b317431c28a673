//go:build ofi && cgo && linux

package main

// gin.Init's multi-process bootstrap: gin registers none itself.
import _ "github.com/rdmactor/rdmactor/internal/bootstrap/remote"
