//go:build !race

package barrier_test

const raceEnabled = false
