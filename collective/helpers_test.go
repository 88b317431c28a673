package collective_test

import (
	"context"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
	"github.com/stretchr/testify/assert"
)

// job is the ranks of one test as goroutines of this process, each with a
// collective.Comm on signals 0..n-1.
type job struct {
	t     testing.TB
	comms []*gin.Comm
	colls []*collective.Comm
	ctx   context.Context // ends at the deadline, or when a rank fails
	stop  context.CancelFunc
}

func newJob(t testing.TB, n int, cfg collective.Config) *job {
	t.Helper()
	ctx, stop, comms := ginlocal.Comms(t, n, gin.Config{Signals: int(cfg.Signal0) + collective.Requirement(n)}, 2*time.Minute)
	j := &job{t: t, comms: comms, colls: make([]*collective.Comm, n), ctx: ctx, stop: stop}
	j.ranks(func(r int) (err error) {
		j.colls[r], err = collective.New(ctx, comms[r], cfg)
		return err
	})
	return j
}

// windows registers size bytes on every rank.
func (j *job) windows(size int) []*gin.Window {
	j.t.Helper()
	ws := make([]*gin.Window, len(j.comms))
	j.ranks(func(r int) (err error) {
		ws[r], err = j.comms[r].RegisterWindow(j.ctx, size, 0)
		return err
	})
	return ws
}

// ranks runs fn for every rank in its own goroutine and fails the test
// with every rank's error. The first failure ends the job's context, so
// the ranks waiting for the failed one stop too.
func (j *job) ranks(fn func(r int) error) {
	j.t.Helper()
	for r, err := range testutils.GoRanks(len(j.comms), j.stop, fn) {
		assert.NoError(j.t, err, "rank %d", r)
	}
}
