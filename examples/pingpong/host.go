package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"time"
)

// host describes the machine for the report's first line.
func host() string {
	model := "unknown cpu"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && string(bytes.TrimSpace(k)) == "model name" {
				model = string(bytes.TrimSpace(v))
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := bytes.Fields(b); len(f) >= 3 {
			load = fmt.Sprintf(", load %s %s %s", f[0], f[1], f[2])
		}
	}
	return fmt.Sprintf("%d cpus, %s, GOMAXPROCS %d, %s%s", runtime.NumCPU(), model, runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02T15:04Z"), load)
}
