package remote_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/bootstrap/remote"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestRemoteProcesses(t *testing.T) {
	for _, order := range []string{"", "up", "down"} {
		t.Run("close="+order, func(t *testing.T) {
			start := time.Now()
			testutils.RunRanks(t, 4, "allgather", envCloseOrder+"="+order)
			t.Logf("4 processes in %v", time.Since(start))
		})
	}
}

// The control plane over TLS (as beyond loopback; forced here).
func TestRemoteProcessesTLS(t *testing.T) {
	testutils.RunRanks(t, 4, "allgather", remote.EnvControlTLS+"=1")
}

func TestRemoteCloseEarly(t *testing.T) {
	testutils.RunRanks(t, 3, "closeearly")
}

func TestRemoteRankDies(t *testing.T) {
	for _, die := range []int{2, 0} {
		t.Run("rank"+strconv.Itoa(die), func(t *testing.T) {
			res := testutils.RunRanksOpts(t, launch.Options{NP: 4, Env: []string{envDie + "=" + strconv.Itoa(die)}}, "die")
			for _, r := range res {
				want := 0
				if r.Rank == die {
					want = 3
				}
				if r.ExitCode != want {
					t.Errorf("rank %d: exit code %d (%v), want %d", r.Rank, r.ExitCode, r.Err, want)
				}
			}
		})
	}
}

// testSecret is a job secret for tests that build Configs by hand.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// TestRemoteJoinTimeout runs two remotes in this process, one after the
// other, with no gRPC traffic: see New on one remote per process.
func TestRemoteJoinTimeout(t *testing.T) {
	addr := freeAddr(t)
	start := time.Now()
	_, err := remote.New(context.Background(), remote.Config{Config: bootstrap.Config{Rank: 0, Size: 2, Addr: addr, Secret: testSecret}, ConnectTimeout: 300 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "[1]") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 0 alone: %v, want a timeout naming rank 1", err)
	}
	_, err = remote.New(context.Background(), remote.Config{Config: bootstrap.Config{Rank: 1, Size: 2, Addr: addr, Secret: testSecret}, ConnectTimeout: 300 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 1 alone: %v, want a timeout", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
}
