package bootstrap_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
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
	testutils.RunRanks(t, 4, "allgather", bootstrap.EnvControlTLS+"=1")
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

// testSecret is a job secret for tests that build RemoteConfigs by hand.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(bootstrap.EnvSecret, "00112233445566778899aabbccddeeff")
	set := func(rank, size, addr, job string) {
		t.Setenv(bootstrap.EnvRank, rank)
		t.Setenv(bootstrap.EnvWorldSize, size)
		t.Setenv(bootstrap.EnvBootstrap, addr)
		t.Setenv(bootstrap.EnvJob, job)
	}
	for _, c := range []struct {
		rank, size, addr, job string
		wantErr               string // a substring; "" for success
	}{
		{"1", "4", "127.0.0.1:2950", "", ""},
		{"1", "4", "127.0.0.1:2950", "myjob", ""},
		{"", "4", "127.0.0.1:2950", "", bootstrap.EnvRank},
		{"x", "4", "127.0.0.1:2950", "", bootstrap.EnvRank},
		{"4", "4", "127.0.0.1:2950", "", bootstrap.EnvRank},
		{"0", "", "127.0.0.1:2950", "", bootstrap.EnvWorldSize},
		{"0", "0", "127.0.0.1:2950", "", bootstrap.EnvWorldSize},
		{"0", "2", "", "", bootstrap.EnvBootstrap},
		{"0", "2", "127.0.0.1", "", bootstrap.EnvBootstrap},
		{"0", "2", "127.0.0.1:x", "", bootstrap.EnvBootstrap},
		{"0", "2", "127.0.0.1:1", "a/b", bootstrap.EnvJob},
	} {
		set(c.rank, c.size, c.addr, c.job)
		cfg, err := bootstrap.ConfigFromEnv()
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%+v: %v", c, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%+v: error %v, want one naming %s", c, err, c.wantErr)
		case err == nil && (cfg.Rank != 1 || cfg.Size != 4 || cfg.Addr != c.addr || cfg.Job != c.job):
			t.Errorf("%+v: got %+v", c, cfg)
		}
	}
	if a, b := bootstrap.DefaultJob("h:1"), bootstrap.DefaultJob("h:2"); a == b || !strings.HasPrefix(a, "j") {
		t.Errorf("DefaultJob: %q %q", a, b)
	}
}

// TestRemoteJoinTimeout runs two remotes in this process, one after the
// other, with no gRPC traffic: see NewRemote on one remote per process.
func TestRemoteJoinTimeout(t *testing.T) {
	addr := freeAddr(t)
	start := time.Now()
	_, err := bootstrap.NewRemote(context.Background(), bootstrap.RemoteConfig{Rank: 0, Size: 2, Addr: addr, ConnectTimeout: 300 * time.Millisecond, Secret: testSecret})
	if err == nil || !strings.Contains(err.Error(), "[1]") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 0 alone: %v, want a timeout naming rank 1", err)
	}
	_, err = bootstrap.NewRemote(context.Background(), bootstrap.RemoteConfig{Rank: 1, Size: 2, Addr: addr, ConnectTimeout: 300 * time.Millisecond, Secret: testSecret})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("rank 1 alone: %v, want a timeout", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v", el)
	}
}

// The job secret comes from the environment or from a file only its owner
// can read; without one a rank refuses to join.
func TestSecretFromEnv(t *testing.T) {
	t.Setenv(bootstrap.EnvRank, "0")
	t.Setenv(bootstrap.EnvWorldSize, "2")
	t.Setenv(bootstrap.EnvBootstrap, "127.0.0.1:2950")
	t.Setenv(bootstrap.EnvSecret, "")
	t.Setenv(bootstrap.EnvSecretFile, "")
	if _, err := bootstrap.ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), bootstrap.EnvSecret) {
		t.Errorf("no secret: %v, want an error naming %s", err, bootstrap.EnvSecret)
	}
	f := t.TempDir() + "/secret"
	if err := os.WriteFile(f, []byte("00112233445566778899aabbccddeeff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(bootstrap.EnvSecretFile, f)
	if _, err := bootstrap.ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable secret file: %v, want it refused", err)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := bootstrap.ConfigFromEnv()
	if err != nil || len(cfg.Secret) != 16 {
		t.Errorf("secret file: %v, %d bytes", err, len(cfg.Secret))
	}
}
