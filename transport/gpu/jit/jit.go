// Package jit compiles CUDA C++ kernels with NVRTC for the GPU at hand, on
// first use, and keeps the cubins in an on-disk cache keyed by a hash of
// everything that affects the output, so a program compiles each kernel
// once per machine, driver toolkit and source version.
//
// The cache lives in $RDMACTOR_CUBIN_CACHE, else $XDG_CACHE_HOME/rdmactor/cubin,
// else ~/.cache/rdmactor/cubin (the XDG base directory spec); setting
// RDMACTOR_CUBIN_CACHE=off disables it. Entries are written to a temporary
// file and renamed, so concurrent ranks compiling the same kernel never
// read half a file. A cache that cannot be read or written is skipped, not
// an error.
package jit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
)

// EnvCache overrides the cache directory; "off" disables the cache.
const EnvCache = "RDMACTOR_CUBIN_CACHE"

// keyVersion changes when the key's recipe changes.
const keyVersion = "rdmactor-jit-1"

// DefaultOptions are the NVRTC options every compilation gets, before the
// architecture and the caller's extra options.
var DefaultOptions = []string{"--std=c++17", "-default-device", "-lineinfo"}

// Options returns the full NVRTC option list for arch (e.g. "sm_90").
func Options(arch string, extra ...string) []string {
	opts := append([]string{"--gpu-architecture=" + arch}, DefaultOptions...)
	return append(opts, extra...)
}

// Compile returns the cubin of src for arch ("sm_90"), from the cache when
// an entry with the same key exists, else compiled by NVRTC and stored. A
// compile error is a *cuda.NVRTCError carrying NVRTC's log.
func Compile(src cuda.Source, arch string, extra ...string) ([]byte, error) {
	opts := Options(arch, extra...)
	ma, mi, err := cuda.NVRTCVersion()
	if err != nil {
		return nil, err
	}
	key := Key(src, fmt.Sprintf("%d.%d", ma, mi), opts)
	path := ""
	if dir := Dir(); dir != "" {
		path = filepath.Join(dir, key+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b, nil
		}
	}
	cubin, err := cuda.Compile(src, opts)
	if err != nil {
		return nil, err
	}
	if path != "" {
		_ = store(path, cubin) // a cache we cannot write is only slower
	}
	return cubin, nil
}

// Key is the cache key of compiling src with NVRTC version nvrtc and
// options: a hex SHA-256 over the recipe version, the NVRTC version, the
// options in order, the source's name and text, and every header (name and
// text, in name order). Each field is length-prefixed, so no two inputs
// collide by concatenation.
func Key(src cuda.Source, nvrtc string, options []string) string {
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(keyVersion)
	field(nvrtc)
	field(fmt.Sprint(len(options)))
	for _, o := range options {
		field(o)
	}
	field(src.Name)
	field(src.Code)
	names := make([]string, 0, len(src.Headers))
	for n := range src.Headers {
		names = append(names, n)
	}
	sort.Strings(names)
	field(fmt.Sprint(len(names)))
	for _, n := range names {
		field(n)
		field(src.Headers[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Dir is the cache directory, or "" when the cache is off or no home
// directory is known.
func Dir() string {
	switch v := os.Getenv(EnvCache); v {
	case "off":
		return ""
	case "":
	default:
		return v
	}
	if x := os.Getenv("XDG_CACHE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "rdmactor", "cubin")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(home, ".cache", "rdmactor", "cubin")
}

// store writes b to path through a temporary file and a rename.
func store(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*.cubin")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
