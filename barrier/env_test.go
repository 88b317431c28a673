package barrier_test

import "os"

// envOr is the environment variable k, or def when unset.
func envOr(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}
