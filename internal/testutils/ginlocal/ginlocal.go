// Package ginlocal starts the ranks of a test job as goroutines of the
// test process (gin.NewLocal), for the tests of the packages above gin
// (barrier, collective, moe). It is apart from package testutils, which
// must not import gin: gin's in-package tests use testutils.
package ginlocal

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

// Comms makes n ranks with cfg over the provider gin.NewLocal picks (the
// test binary registers it). ctx ends after d or before the test binary's
// deadline (testutils.Deadline), when the test ends, or at stop, which a
// failing rank calls (testutils.GoRanks) so that the others stop waiting.
// Every Comm is closed when the test ends; a Close error fails the test,
// and so does a failure to make the ranks.
func Comms(t testing.TB, n int, cfg gin.Config, d time.Duration) (ctx context.Context, stop context.CancelFunc, comms []*gin.Comm) {
	t.Helper()
	ctx, stop = context.WithCancel(testutils.Deadline(t, d))
	comms, err := gin.NewLocal(ctx, n, cfg)
	require.NoError(t, err)
	t.Cleanup(stop)
	t.Cleanup(func() {
		for r, c := range comms {
			if err := c.Close(); err != nil {
				t.Errorf("close rank %d: %v", r, err)
			}
		}
	})
	return ctx, stop, comms
}

// Windows registers a window of size bytes on every Comm of a job, all at
// once (gin.Comm.RegisterWindow is collective), and fails the test if any
// rank's registration fails. It returns the windows by rank.
func Windows(t testing.TB, ctx context.Context, comms []*gin.Comm, size int) []*gin.Window {
	t.Helper()
	wins := make([]*gin.Window, len(comms))
	errs := testutils.GoRanks(len(comms), nil, func(r int) error {
		var err error
		wins[r], err = comms[r].RegisterWindow(ctx, size, 0)
		return err
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d: register a window of %d bytes", r, size)
	}
	return wins
}

// Transports are the providers a benchmark of goroutine ranks runs on:
// shm and ofi (which the benchmark skips where the binary lacks it), or
// only the one gin.EnvTransport names.
func Transports() []string {
	if t := os.Getenv(gin.EnvTransport); t != "" {
		return []string{t}
	}
	return []string{"shm", "ofi"}
}
