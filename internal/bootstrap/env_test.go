package bootstrap_test

import (
	"os"
	"strings"
	"testing"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

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
