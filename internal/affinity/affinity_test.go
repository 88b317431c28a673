package affinity

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBitmap(t *testing.T) {
	assert.Nil(t, Bitmap(nil))
	assert.Equal(t, []byte{0x05}, Bitmap([]int{0, 2}))
	assert.Equal(t, []byte{0x01, 0x00, 0x80}, Bitmap([]int{0, 23}))
}

// TestGetSet: a locked thread confined to its first processor reads that
// set back, and its old set once restored.
func TestGetSet(t *testing.T) {
	cpus, err := Get()
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.Len(t, cpus, runtime.NumCPU())
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, Set(0, cpus[:1]))
	got, err := Get()
	require.NoError(t, err)
	assert.Equal(t, cpus[:1], got)
	require.NoError(t, Set(0, cpus))
	got, err = Get()
	require.NoError(t, err)
	assert.Equal(t, cpus, got)
}
