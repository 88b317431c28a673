package jit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmactor/rdmactor/transport/gpu/cuda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKey(t *testing.T) {
	base := cuda.Source{Name: "k.cu", Code: "extern \"C\" __global__ void k() {}",
		Headers: map[string]string{"a.cuh": "A", "b.cuh": "B"}}
	opts := Options("sm_90")
	k0 := Key(base, "13.0", opts)
	require.Len(t, k0, 64)

	// The same inputs give the same key, whatever the map's order.
	again := base
	again.Headers = map[string]string{"b.cuh": "B", "a.cuh": "A"}
	assert.Equal(t, k0, Key(again, "13.0", opts))

	changed := map[string]string{}
	add := func(name, key string) {
		t.Helper()
		assert.NotEqual(t, k0, key, name)
		for other, k := range changed {
			assert.NotEqual(t, k, key, "%s collides with %s", name, other)
		}
		changed[name] = key
	}
	hdr := base
	hdr.Headers = map[string]string{"a.cuh": "A2", "b.cuh": "B"}
	add("header text", Key(hdr, "13.0", opts))
	ren := base
	ren.Headers = map[string]string{"a2.cuh": "A", "b.cuh": "B"}
	add("header name", Key(ren, "13.0", opts))
	code := base
	code.Code += " "
	add("code", Key(code, "13.0", opts))
	name := base
	name.Name = "j.cu"
	add("name", Key(name, "13.0", opts))
	add("nvrtc version", Key(base, "13.1", opts))
	add("arch", Key(base, "13.0", Options("sm_100")))
	add("extra option", Key(base, "13.0", Options("sm_90", "-DX")))
	// Length prefixes: moving a byte between fields changes the key.
	split := base
	split.Headers = map[string]string{"a.cuh": "AB", "b.cuh": ""}
	add("bytes moved between headers", Key(split, "13.0", opts))
}

func TestDir(t *testing.T) {
	t.Setenv(EnvCache, "")
	t.Setenv("XDG_CACHE_HOME", "/x/cache")
	assert.Equal(t, "/x/cache/rdmactor/cubin", Dir())
	t.Setenv("XDG_CACHE_HOME", "relative") // the spec says: ignore relative paths
	t.Setenv("HOME", "/home/u")
	assert.Equal(t, "/home/u/.cache/rdmactor/cubin", Dir())
	t.Setenv(EnvCache, "/elsewhere")
	assert.Equal(t, "/elsewhere", Dir())
	t.Setenv(EnvCache, "off")
	assert.Equal(t, "", Dir())
}

func TestStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "k.cubin")
	require.NoError(t, store(path, []byte("cubin")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "cubin", string(b))
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".tmp-*"))
	assert.Empty(t, left, "temporary files left behind")
}
