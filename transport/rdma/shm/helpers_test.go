package shm

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

var unsafeJobChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// testJob returns a job name unique to this test run and registers a check
// that no file of it is left when the test ends (then removes any).
func testJob(tb testing.TB) string {
	tb.Helper()
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := unsafeJobChars.ReplaceAllString(tb.Name(), "_")
	if len(name) > 100 {
		name = name[:100]
	}
	job := name + "-" + hex.EncodeToString(r[:])
	tb.Cleanup(func() {
		assert.Empty(tb, jobFiles(tb, job), "files of job %s left in %s", job, shmDir())
		require.NoError(tb, Cleanup(job))
	})
	return job
}

// jobFiles lists the files of job in the shm directory.
func jobFiles(tb testing.TB, job string) []string {
	tb.Helper()
	entries, err := os.ReadDir(shmDir())
	require.NoError(tb, err)
	var names []string
	for _, e := range entries {
		if isJobFile(job, e.Name()) {
			names = append(names, filepath.Join(shmDir(), e.Name()))
		}
	}
	return names
}

// testFiles is the mode this test's providers export in (EnvFiles):
// memfd, or named when TestNamedFiles re-runs the suite.
func testFiles(tb testing.TB) fileMode {
	tb.Helper()
	m, err := filesFromEnv()
	require.NoError(tb, err)
	return m
}

// openRank opens the shm provider for rank of size in job through the
// registry and closes it when the test ends (before testJob's check).
func openRank(tb testing.TB, job string, rank, size int) *Provider {
	tb.Helper()
	p, err := rdma.Open("shm", rdma.Config{Rank: rank, Size: size, Job: job})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = p.Close() })
	return p.(*Provider)
}

// pair is two in-process ranks: rank 0 puts into rank 1's window.
type pair struct {
	p0, p1 *Provider
	src    *Region           // rank 0's source region (LocalOnly)
	dst    *Region           // rank 1's exported window
	imp    rdma.RemoteRegion // rank 0's import of dst
	qp     rdma.QP           // rank 0 -> rank 1
	done   []uint64          // WrIDs completed on qp, in order
}

// newPair registers a srcSize-byte source on rank 0 and a dstSize-byte
// window on rank 1, imports the window on rank 0 and connects 0 -> 1.
func newPair(tb testing.TB, srcSize, dstSize int) *pair {
	tb.Helper()
	job := testJob(tb)
	pr := &pair{p0: openRank(tb, job, 0, 2), p1: openRank(tb, job, 1, 2)}
	src, err := pr.p0.RegisterMemory(srcSize, rdma.LocalOnly)
	require.NoError(tb, err)
	dst, err := pr.p1.RegisterMemory(dstSize, 0)
	require.NoError(tb, err)
	pr.src, pr.dst = src.(*Region), dst.(*Region)
	pr.imp, err = pr.p0.Import(1, dst.Descriptor())
	require.NoError(tb, err)
	pr.qp, err = pr.p0.Connect(1, func(wrID uint64, err error) {
		assert.NoError(tb, err)
		pr.done = append(pr.done, wrID)
	})
	require.NoError(tb, err)
	return pr
}

// word returns the value of the 64-bit word at off in r, read atomically.
func word(r *Region, off int) uint64 { return memword.Uint64(r.Bytes(), off).Load() }

// fill writes a pattern that differs per position and per seed.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*7) + seed
	}
}
