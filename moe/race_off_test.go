//go:build !race

package moe_test

const raceEnabled = false
