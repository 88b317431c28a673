package bootstrap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// StdPackage is the package whose import registers the usual
// process-spanning Bootstrap (with the usual providers); errors about a
// missing registration name it.
const StdPackage = "github.com/rdmactor/rdmactor/transport/rdma/std"

// FromEnvFunc joins the multi-process job that the environment describes
// and returns this rank's Bootstrap.
type FromEnvFunc func(ctx context.Context) (Bootstrap, error)

var (
	regMu    sync.Mutex
	registry = map[string]FromEnvFunc{}
)

// Register makes a process-spanning Bootstrap available to FromEnv under
// name, as database/sql drivers register: the implementing package calls
// it from init, so that the packages that use a Bootstrap (gin) import no
// control-plane transport. It panics if fromEnv is nil or name is empty or
// already registered (a programming error, found at start-up).
func Register(name string, fromEnv FromEnvFunc) {
	if name == "" || fromEnv == nil {
		panic("bootstrap.Register: empty name or nil function")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[name]; dup {
		panic(fmt.Sprintf("bootstrap.Register: %q registered twice", name))
	}
	registry[name] = fromEnv
}

// Registered returns the names of the registered Bootstraps, sorted.
func Registered() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// FromEnv joins the job described by the environment through the one
// registered Bootstrap and returns its error as is. When none is
// registered it returns an error naming StdPackage (after ConfigFromEnv's
// error, if the environment describes no job at all); when several are,
// an error naming them.
func FromEnv(ctx context.Context) (Bootstrap, error) {
	regMu.Lock()
	fs := make([]FromEnvFunc, 0, len(registry))
	for _, f := range registry {
		fs = append(fs, f)
	}
	regMu.Unlock()
	switch len(fs) {
	case 0:
		if _, err := ConfigFromEnv(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("bootstrap: no multi-process bootstrap registered: import _ %q (package actor does) or another package that registers one", StdPackage)
	case 1:
		return fs[0](ctx)
	}
	return nil, fmt.Errorf("bootstrap: %d multi-process bootstraps registered (%s): a program imports one", len(fs), strings.Join(Registered(), ", "))
}
