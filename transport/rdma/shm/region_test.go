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
				if testFiles(t) == modeMemfd {
					assert.Regexp(t, `^/proc/\d+/fd/\d+$`, r.Path())
					target, err := os.Readlink(r.Path())
					require.NoError(t, err)
					assert.Regexp(t, `^/memfd:rdmactor-`+job+`-r3-\d+ \(deleted\)$`, target)
					assert.Empty(t, jobFiles(t, job), "a memfd has no name in the shm directory")
				} else {
					assert.Regexp(t, `/rdmactor-`+job+`-r3-\d+$`, r.Path())
				}
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
			var target string
			if r.files == modeMemfd {
				target, _ = os.Readlink(r.Path())
			}
			require.NoError(t, r.Close())
			assert.Nil(t, r.Bytes())
			switch r.files {
			case modeNamed:
				assert.NoFileExists(t, r.Path())
			case modeMemfd:
				after, _ := os.Readlink(r.Path())
				assert.NotEqual(t, target, after, "Close closes the memfd")
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
	// memfd is good's region as a memfd of pid's fd, in either mode.
	memfd := func(pid, fd int) []byte {
		return descriptor{rank: 1, seq: pr.dst.seq, size: 4096, files: modeMemfd, pid: pid, fd: fd}.encode()
	}
	// wrongMode names the region in the mode it was not created in.
	wrongMode := descriptor{rank: 1, seq: pr.dst.seq, size: 4096, files: modeNamed}.encode()
	if pr.dst.files == modeNamed {
		wrongMode = memfd(os.Getpid(), pr.dst.fd)
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
		{"files high byte", 1, with(func(b []byte) { b[13] = 1 })},
		{"other rank", 0, good},
		{"rank out of world", 7, good},
		{"negative peer", -1, good},
		{"rank huge", 1, with(func(b []byte) { binary.LittleEndian.PutUint32(b[8:], 1<<31) })},
		{"size huge", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 1<<63) })},
		{"size past file", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[24:], 8192) })},
		{"no such file", 1, with(func(b []byte) { binary.LittleEndian.PutUint64(b[16:], 999) })},
		{"garbage", 1, []byte("rdsh\x03\x00\x00\x00\xff\xff\xff\xff\x01\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")},
		{"version 2", 1, with(func(b []byte) { b[4] = 2 })},
		{"files 0", 1, with(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 0) })},
		{"files 3", 1, with(func(b []byte) { binary.LittleEndian.PutUint32(b[12:], 3) })},
		{"memfd pid 0", 1, memfd(0, pr.dst.fd)},
		{"memfd pid huge", 1, memfd(1<<31, pr.dst.fd)},
		{"memfd fd huge", 1, memfd(os.Getpid(), 1<<31)},
		{"memfd fd not a region", 1, memfd(os.Getpid(), 0)},
		{"memfd of another process", 1, memfd(1, pr.dst.fd)},
		{"memfd of no process", 1, memfd(1<<22+1, 3)},
		{"named with pid", 1, with(func(b []byte) {
			binary.LittleEndian.PutUint32(b[12:], uint32(modeNamed))
			binary.LittleEndian.PutUint32(b[32:], 1)
			binary.LittleEndian.PutUint32(b[36:], 0)
		})},
		{"named with fd", 1, with(func(b []byte) {
			binary.LittleEndian.PutUint32(b[12:], uint32(modeNamed))
			binary.LittleEndian.PutUint32(b[32:], 0)
			binary.LittleEndian.PutUint32(b[36:], 1)
		})},
		{"wrong mode", 1, wrongMode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			imp, err := pr.p0.Import(tc.peer, tc.desc)
			require.Error(t, err)
			assert.Nil(t, imp)
		})
	}
}

func FuzzDecodeDescriptor(f *testing.F) {
	f.Add(descriptor{rank: 1, seq: 2, size: 4096, files: modeNamed}.encode())
	f.Add(descriptor{rank: 1, seq: 2, size: 4096, files: modeMemfd, pid: 1234, fd: 7}.encode())
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

func TestDecodeDescriptor(t *testing.T) {
	for _, d := range []descriptor{
		{rank: 0, seq: 1, size: 0, files: modeNamed},
		{rank: 3, seq: 1 << 40, size: 1 << 30, files: modeMemfd, pid: 1, fd: 0},
		{rank: 1<<31 - 1, seq: 9, size: 4096, files: modeMemfd, pid: 1<<31 - 1, fd: 1<<31 - 1},
	} {
		got, err := decodeDescriptor(d.encode())
		require.NoError(t, err)
		assert.Equal(t, d, got)
	}
	for _, d := range []descriptor{
		{files: 0},
		{files: 3},
		{files: modeMemfd, pid: 0, fd: 3},
		{files: modeMemfd, pid: 1 << 31, fd: 3},
		{files: modeMemfd, pid: 1, fd: 1 << 31},
		{files: modeMemfd, pid: 1, fd: -1},
		{files: modeNamed, pid: 1},
		{files: modeNamed, fd: 1},
	} {
		_, err := decodeDescriptor(d.encode())
		assert.ErrorIs(t, err, errBadDescriptor, "%+v", d)
	}
}

func TestUnlink(t *testing.T) {
	pr := newPair(t, 64, 4096)
	named := pr.dst.files == modeNamed
	path := pr.dst.Path()
	require.FileExists(t, path)
	require.NoError(t, pr.dst.Unlink())
	if named {
		assert.NoFileExists(t, path)
	} else {
		assert.FileExists(t, path, "a memfd has no name: Unlink is a no-op")
	}
	require.NoError(t, pr.dst.Unlink(), "twice")

	// The import made before still writes into the owner's mapping.
	copy(pr.src.Bytes(), "after unlink")
	require.NoError(t, pr.qp.Post([]rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 100, Len: 12,
		Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 0, ModeOff: 8}}}))
	assert.Equal(t, "after unlink", string(pr.dst.Bytes()[100:112]))
	assert.Equal(t, uint64(1), word(pr.dst, 0))

	// A new import from another rank needs the name of a named file; a
	// memfd stays importable until its owner closes it.
	imp, err := pr.p0.Import(1, pr.dst.Descriptor())
	if named {
		require.ErrorIs(t, err, os.ErrNotExist)
	} else {
		require.NoError(t, err)
		require.NoError(t, imp.Close())
	}

	// Provider.Unlink covers every exported region.
	more, err := pr.p1.RegisterMemory(8, 0)
	require.NoError(t, err)
	require.FileExists(t, more.(*Region).Path())
	var u Unlinker = pr.p1
	require.NoError(t, u.Unlink())
	if named {
		assert.NoFileExists(t, more.(*Region).Path())
	}
	assert.Empty(t, jobFiles(t, pr.p1.cfg.Job))

	require.NoError(t, pr.dst.Close())
	require.ErrorIs(t, pr.dst.Unlink(), rdma.ErrClosed)
	if !named {
		_, err := pr.p0.Import(1, pr.dst.Descriptor())
		require.ErrorIs(t, err, ErrOwnerGone, "a closed memfd region cannot be imported")
	}
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
	named := testFiles(t) == modeNamed
	if named {
		assert.Len(t, jobFiles(t, job), 4)
	} else {
		assert.Len(t, jobFiles(t, job), 1, "memfd regions have no file")
	}

	require.NoError(t, Cleanup(job))
	assert.Empty(t, jobFiles(t, job))
	for _, f := range others {
		assert.FileExists(t, f, "not of this job")
	}
	for _, f := range paths {
		if named {
			assert.NoFileExists(t, f)
		} else {
			assert.FileExists(t, f, "Cleanup leaves memfd regions alone")
		}
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
	if testFiles(t) == modeMemfd {
		_, err := p.RegisterMemory(8, 0)
		require.NoError(t, err, "a memfd needs no name in the shm directory")
		b, err := os.ReadFile(stale)
		require.NoError(t, err)
		assert.Equal(t, "stale", string(b), "untouched")
		require.NoError(t, os.Remove(stale))
		return
	}
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
