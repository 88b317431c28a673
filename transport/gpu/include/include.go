// Package include holds the device-side API that user kernels include,
// rdmactor/gin.cuh and its impl/ bodies, embedded in the binary so that
// NVRTC compiles kernels without any file on disk (Headers goes to
// cuda.Source.Headers).
//
// gin.cuh is the readable contract (types, prototypes, promises); impl/
// holds the bodies and the layouts shared with the Go side.
package include

import (
	"embed"
	"io/fs"
	"strings"
	"sync"
)

//go:embed rdmactor
var files embed.FS

// Main is the include name of the public header.
const Main = "rdmactor/gin.cuh"

var (
	once    sync.Once
	headers map[string]string
)

// Headers returns every embedded header by its include name, e.g.
// "rdmactor/gin.cuh" and "rdmactor/impl/gin__funcs.cuh". The map is
// shared: do not modify it.
func Headers() map[string]string {
	once.Do(func() {
		headers = map[string]string{}
		fs.WalkDir(files, "rdmactor", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".cuh") {
				return err
			}
			b, err := files.ReadFile(path)
			if err != nil {
				return err
			}
			headers[path] = string(b)
			return nil
		})
	})
	return headers
}
