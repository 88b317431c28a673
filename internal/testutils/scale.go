package testutils

import "testing"

// Scale picks a test's size or count: n normally, small under the race
// detector (which slows the ranks' polling several times) or -short.
func Scale(n, small int) int {
	if Race || testing.Short() {
		return small
	}
	return n
}
