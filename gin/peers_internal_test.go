package gin

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckSymmetric(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets [][]int
		bad  string // "" when symmetric, else the pair the error names
	}{
		{"all nil", [][]int{nil, nil, nil}, ""},
		{"ring", [][]int{{1, 3}, {0, 2}, {1, 3}, {0, 2}}, ""},
		{"hub", [][]int{nil, {0}, {0}}, ""},
		{"alone", [][]int{{}, {}}, ""},
		{"one-sided", [][]int{{1}, {}}, "rank 0 lists rank 1"},
		{"spoke misses hub", [][]int{nil, {0}, {}}, "rank 0 lists rank 2"},
		{"two hubs, one spoke knows one", [][]int{nil, nil, {0}}, "rank 1 lists rank 2"},
	} {
		err := checkSymmetric(tc.sets)
		if tc.bad == "" {
			assert.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrBadArgument, tc.name)
		assert.Contains(t, err.Error(), tc.bad, tc.name)
	}
}

func TestHelloRoundTrip(t *testing.T) {
	c := &Comm{rank: 2, size: 5, cfg: Config{Peers: []int{4, 0, 2, 4}}}
	require.NoError(t, c.setPeers())
	h, err := readHello(2, 5, c.hello("h/boot", []byte{0, 0x30}))
	require.NoError(t, err)
	assert.Equal(t, "h/boot", h.host)
	assert.Equal(t, []int{0, 4}, h.peers)
	assert.Equal(t, []byte{0, 0x30}, h.cpus)

	all := &Comm{rank: 1, size: 5}
	require.NoError(t, all.setPeers())
	h, err = readHello(1, 5, all.hello("h", nil))
	require.NoError(t, err)
	assert.Nil(t, h.peers)
	assert.Nil(t, h.cpus)

	for _, b := range [][]byte{nil, {5, 'a'}, {1, 'a'}, {1, 'a', 9}, {1, 'a', 2}, {1, 'a', 2, 7},
		{1, 'a', 0}, {1, 'a', 0, 2, 1}, {1, 'a', 0, 1, 1, 1}, {1, 'a', 0, 0x81, 0x80, 1}} {
		_, err := readHello(0, 5, b)
		assert.ErrorIs(t, err, ErrBadArgument, "%v", b)
	}
}

func TestHostCPUs(t *testing.T) {
	assert.Equal(t, 2, hostCPUs([][]byte{{0x01}, {0x02}}), "two ranks bound to a core each")
	assert.Equal(t, 1, hostCPUs([][]byte{{0x01}, {0x01}}), "two ranks on one core")
	assert.Equal(t, 3, hostCPUs([][]byte{{0x03}, {0x02, 0x80}}), "sets of different lengths")
	assert.Equal(t, runtime.NumCPU(), hostCPUs([][]byte{{0x01}, nil}), "a set unknown")
	if set := cpuSet(); set != nil {
		assert.Equal(t, runtime.NumCPU(), hostCPUs([][]byte{set}), "this process's own set")
	}
}

func TestShrunkPeers(t *testing.T) {
	assert.Nil(t, shrunkPeers(nil, []int{0, 1, 3}))
	assert.Equal(t, []int{0, 2}, shrunkPeers([]int{0, 2, 3}, []int{0, 1, 3}))
	assert.Equal(t, []int{}, shrunkPeers([]int{2}, []int{0, 1, 3}))
}
