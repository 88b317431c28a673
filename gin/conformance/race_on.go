//go:build race

package conformance

// raceEnabled scales iteration counts down under the race detector.
const raceEnabled = true
