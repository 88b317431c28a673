package bootstrap_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// With no Bootstrap registered (this package's tests import none), FromEnv
// names the package to import once the environment describes a job; once
// one is registered it is used; with two, FromEnv names them.
func TestRegister(t *testing.T) {
	t.Setenv(bootstrap.EnvSecret, "00112233445566778899aabbccddeeff")
	t.Setenv(bootstrap.EnvRank, "0")
	t.Setenv(bootstrap.EnvWorldSize, "2")
	t.Setenv(bootstrap.EnvBootstrap, "")
	ctx := context.Background()
	if _, err := bootstrap.FromEnv(ctx); err == nil || !strings.Contains(err.Error(), bootstrap.EnvBootstrap) {
		t.Errorf("no job described: %v, want an error naming %s", err, bootstrap.EnvBootstrap)
	}
	t.Setenv(bootstrap.EnvBootstrap, "127.0.0.1:2950")
	if _, err := bootstrap.FromEnv(ctx); err == nil || !strings.Contains(err.Error(), bootstrap.StdPackage) {
		t.Errorf("none registered: %v, want an error naming %s", err, bootstrap.StdPackage)
	}
	errFake := errors.New("fake bootstrap called")
	bootstrap.Register("fake", func(context.Context) (bootstrap.Bootstrap, error) { return nil, errFake })
	if _, err := bootstrap.FromEnv(ctx); !errors.Is(err, errFake) {
		t.Errorf("one registered: %v, want its error", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("registering a name twice did not panic")
			}
		}()
		bootstrap.Register("fake", func(context.Context) (bootstrap.Bootstrap, error) { return nil, nil })
	}()
	bootstrap.Register("fake2", func(context.Context) (bootstrap.Bootstrap, error) { return nil, errFake })
	if _, err := bootstrap.FromEnv(ctx); err == nil || !strings.Contains(err.Error(), "fake, fake2") {
		t.Errorf("two registered: %v, want an error naming both", err)
	}
}
