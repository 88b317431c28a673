//go:build race

package mailbox_test

// raceEnabled scales tests down under the race detector.
const raceEnabled = true
