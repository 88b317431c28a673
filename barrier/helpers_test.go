package barrier_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
	"github.com/stretchr/testify/require"
)

// job is the ranks of one test, goroutines of this process.
type job struct {
	t     testing.TB
	comms []*gin.Comm
	ctx   context.Context // ends at the deadline, or when a rank fails
	stop  context.CancelFunc
}

// newJob builds n ranks (gin.NewLocal over shm) with cfg and closes them
// when the test ends; the job's context ends after a minute.
func newJob(t testing.TB, n int, cfg gin.Config) *job {
	t.Helper()
	ctx, stop, comms := ginlocal.Comms(t, n, cfg, time.Minute)
	return &job{t: t, comms: comms, ctx: ctx, stop: stop}
}

// x is rank r's context 0.
func (j *job) x(r int) *gin.Context {
	x, err := j.comms[r].Context(0)
	require.NoError(j.t, err)
	return x
}

// ranks runs fn for every rank in its own goroutine and fails the test
// with every rank's error. The first failure ends the job's context, so
// the ranks waiting for the failed one stop too.
func (j *job) ranks(fn func(r int) error) {
	j.t.Helper()
	for r, err := range testutils.GoRanks(len(j.comms), j.stop, fn) {
		require.NoError(j.t, err, "rank %d", r)
	}
}
