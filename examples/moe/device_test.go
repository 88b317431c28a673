package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDeviceArg(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		device string
		rest   []string
	}{
		{"absent", []string{"-tokens", "8"}, "cpu", []string{"-tokens", "8"}},
		{"separate", []string{"-device", "gpu", "-tokens", "8"}, "gpu", []string{"-tokens", "8"}},
		{"equals", []string{"-tokens=8", "--device=gpu"}, "gpu", []string{"-tokens=8"}},
		{"cpu", []string{"-device=cpu"}, "cpu", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, rest, err := deviceArg(tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.device, d)
			assert.Equal(t, tc.rest, rest)
		})
	}
	_, _, err := deviceArg([]string{"-device", "tpu"})
	assert.Error(t, err)
	_, _, err = deviceArg([]string{"-device"})
	assert.Error(t, err)
}
