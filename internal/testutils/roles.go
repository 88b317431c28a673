package testutils

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
)

// EnvRole names the role a re-executed test binary runs (set by RunRanks).
const EnvRole = "RDMACTOR_TEST_ROLE"

var (
	rolesMu sync.Mutex
	roles   = map[string]func() error{}
)

// Role registers f as the role name, to be run by MainWithRoles in a rank
// process started by RunRanks. Call it from init or TestMain, before
// MainWithRoles. It panics if name is empty or already registered.
func Role(name string, f func() error) {
	rolesMu.Lock()
	defer rolesMu.Unlock()
	if name == "" || roles[name] != nil {
		panic(fmt.Sprintf("testutils.Role: empty or duplicate role %q", name))
	}
	roles[name] = f
}

// MainWithRoles is a package's TestMain body. When EnvRole is set, the
// binary is a rank: it runs that role and exits with 0 when the role returns
// nil, or prints the error to stderr and exits with 1 (2 for an unknown
// role). Otherwise it runs the tests: os.Exit(m.Run()).
func MainWithRoles(m *testing.M) {
	name := os.Getenv(EnvRole)
	if name == "" {
		os.Exit(m.Run())
	}
	rolesMu.Lock()
	f := roles[name]
	known := make([]string, 0, len(roles))
	for n := range roles {
		known = append(known, n)
	}
	rolesMu.Unlock()
	if f == nil {
		sort.Strings(known)
		fmt.Fprintf(os.Stderr, "testutils: unknown role %q (registered: %v)\n", name, known)
		os.Exit(2)
	}
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, "role %s: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}
