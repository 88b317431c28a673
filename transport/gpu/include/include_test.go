package include

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every #include "rdmactor/..." of an embedded header names an embedded
// header, so NVRTC resolves all of them from memory.
func TestHeadersClosed(t *testing.T) {
	h := Headers()
	require.Contains(t, h, Main)
	inc := regexp.MustCompile(`#include "([^"]+)"`)
	for name, text := range h {
		for _, m := range inc.FindAllStringSubmatch(text, -1) {
			assert.Contains(t, h, m[1], "%s includes %s", name, m[1])
		}
		assert.Contains(t, text, "#pragma once", name)
	}
}
