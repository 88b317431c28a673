package shm

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

func TestRegisterMemory(t *testing.T) {
	job := testJob(t)
	p := openRank(t, job, 3, 4)
	for _, tc := range []struct {
		name  string
		size  int
		flags rdma.RegionFlags
	}{
		{"zero", 0, 0},
		{"one", 1, 0},
		{"page", 4096, 0},
		{"page+1", 4097, 0},
		{"local zero", 0, rdma.LocalOnly},
		{"local", 100, rdma.LocalOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mr, err := p.RegisterMemory(tc.size, tc.flags)
			require.NoError(t, err)
			r := mr.(*Region)
			assert.Len(t, r.Bytes(), tc.size)
			assert.Equal(t, tc.size, r.Size())
			assert.Equal(t, make([]byte, tc.size), r.Bytes(), "zeroed")
			if tc.flags&rdma.LocalOnly != 0 {
				assert.Empty(t, r.Descriptor())
				assert.Empty(t, r.Path())
				assert.NoError(t, r.Unlink())
			} else {
				assert.Len(t, r.Descriptor(), descLen)
				assert.Regexp(t, `/rdmactor-`+job+`-r3-\d+$`, r.Path())
				st, err := os.Stat(r.Path())
				require.NoError(t, err)
				assert.Zero(t, st.Size()%int64(os.Getpagesize()))
				assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
				imp, err := p.Import(3, r.Descriptor())
				require.NoError(t, err)
				assert.Equal(t, tc.size, imp.Size())
				assert.Equal(t, 3, imp.Peer())
				require.NoError(t, imp.Close())
			}
			require.NoError(t, r.Close())
			assert.Nil(t, r.Bytes())
			if r.Path() != "" {
				assert.NoFileExists(t, r.Path())
			}
		})
	}
	for _, bad := range []int{-1, -4096, int(^uint(0) >> 1)} {
		_, err := p.RegisterMemory(bad, 0)
		assert.Error(t, err, "size %d", bad)
	}
	_, err := p.RegisterMemory(8, 1<<7)
	assert.ErrorIs(t, err, rdma.ErrNotSupported, "unknown flag")
}

func TestImportMalformed(t *testing.T) {
	pr := newPair(t, 8, 4096)
	good := pr.dst.Descriptor()
	with := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		peer int
		desc []byte
	}{
		{"nil", 1, nil},
		{"empty", 1, []byte{}},
		{"short", 1, good[:31]},
		{"long", 1, append(append([]byte(nil), good...), 0)},
		{"magic", 1, with(func(b []byte) { b[0] = 'x' })},
		{"version", 1, with(func(b []byte) { b[4] = 9 })},
		{"reserved", 1, with(func(b []byte) { b[12] = 1 })},
		{"other rank", 0, good},
		{"rank out of world", 7, good},
		{"negative peer", -1, good},
		{"rank huge", 1, with(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 1<<31) })},
		{"size huge", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<63) })},
		{"size past file", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 8192) })},
		{"no such file", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 999) })},
		{"garbage", 1, []byte("rdsh\x01\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp, err := pr.p0.Import(tc.peer, tc.desc)
			require.Error(t, err)
			assert.Nil(t, imp)
		})
	}
}

func FuzzDecodeDescriptor(f *testing.F) {
	f.Add(descriptor{rank: 1, seq: 2, size: 4096}.encode())
	f.Add([]byte("rdsh"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := decodeDescriptor(b)
		if err != nil {
			require.ErrorIs(t, err, errBadDescriptor)
			return
		}
		require.Equal(t, b, d.encode(), "a valid descriptor round-trips")
		_, err = mapLen(d.size)
		require.NoError(t, err)
	})
}

func TestUnlink(t *testing.T) {
	pr := newPair(t, 64, 4096)
	path := pr.dst.Path()
	require.FileExists(t, path)
	require.NoError(t, pr.dst.Unlink())
	assert.NoFileExists(t, path)
	require.NoError(t, pr.dst.Unlink(), "twice")

	// The import made before still writes into the owner's mapping.
	copy(pr.src.Bytes(), "after unlink")
	require.NoError(t, pr.qp.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 100, Len: 12,
		Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 0, ModeOff: 8}}}))
	assert.Equal(t, "after unlink", string(pr.dst.Bytes()[100:112]))
	assert.Equal(t, uint64(1), word(pr.dst, 0))

	// A new import from another rank needs the name.
	_, err := pr.p0.Import(1, pr.dst.Descriptor())
	require.ErrorIs(t, err, os.ErrNotExist)

	// Provider.Unlink covers every exported region.
	more, err := pr.p1.RegisterMemory(8, 0)
	require.NoError(t, err)
	require.FileExists(t, more.(*Region).Path())
	var u Unlinker = pr.p1
	require.NoError(t, u.Unlink())
	assert.NoFileExists(t, more.(*Region).Path())
	assert.Empty(t, jobFiles(t, pr.p1.cfg.Job))

	require.NoError(t, pr.dst.Close())
	require.ErrorIs(t, pr.dst.Unlink(), rdma.ErrClosed)
}

func TestCleanup(t *testing.T) {
	job := testJob(t)
	p := openRank(t, job, 0, 2)
	var paths []string
	for range 3 {
		r, err := p.RegisterMemory(4096, 0)
		require.NoError(t, err)
		paths = append(paths, r.(*Region).Path())
	}
	// A stale file of a killed rank, and files of other jobs whose names
	// start like this job's.
	stale := filepath.Join(shmDir(), fileName(job, 1, 7))
	others := []string{
		filepath.Join(shmDir(), fileName(job+"-b", 0, 1)),
		filepath.Join(shmDir(), fileName(job+"-r1", 0, 1)),
		filepath.Join(shmDir(), filePrefix+job+"-r0-1x"),
	}
	for _, f := range append([]string{stale}, others...) {
		require.NoError(t, os.WriteFile(f, nil, 0o600))
	}
	t.Cleanup(func() {
		for _, f := range others {
			assert.NoError(t, os.Remove(f))
		}
	})
	assert.Len(t, jobFiles(t, job), 4)

	require.NoError(t, Cleanup(job))
	assert.Empty(t, jobFiles(t, job))
	for _, f := range others {
		assert.FileExists(t, f, "not of this job")
	}
	for _, f := range paths {
		assert.NoFileExists(t, f)
	}
	require.NoError(t, Cleanup(job), "idempotent")
	require.Error(t, Cleanup("../etc"))
	require.Error(t, Cleanup(""))
	require.NoError(t, p.Close(), "removing files already gone is fine")
}

func TestRegisterExistingFile(t *testing.T) {
	job := testJob(t)
	p := openRank(t, job, 0, 1)
	stale := filepath.Join(shmDir(), fileName(job, 0, 1))
	require.NoError(t, os.WriteFile(stale, []byte("stale"), 0o600))
	_, err := p.RegisterMemory(8, 0)
	require.ErrorIs(t, err, os.ErrExist, "an existing name is never reused")
	require.NoError(t, os.Remove(stale))
	r, err := p.RegisterMemory(8, 0)
	require.NoError(t, err, "next sequence number")
	assert.NotEqual(t, stale, r.(*Region).Path())
}

func TestIsJobFile(t *testing.T) {
	for _, tc := range []struct {
		job, name string
		want      bool
	}{
		{"a", "rdmactor-a-r0-1", true},
		{"a", "rdmactor-a-r12-345", true},
		{"a", "rdmactor-a-b-r0-1", false},
		{"a", "rdmactor-a-r1-r0-1", false},
		{"a-r1", "rdmactor-a-r1-r0-1", true},
		{"a", "rdmactor-a-r0-", false},
		{"a", "rdmactor-a-r-1", false},
		{"a", "rdmactor-a-r0-1.tmp", false},
		{"a", "xrdmactor-a-r0-1", false},
	} {
		assert.Equal(t, tc.want, isJobFile(tc.job, tc.name), "job %q name %q", tc.job, tc.name)
	}
}
