//go:build race

package barrier_test

const raceEnabled = true
