//go:build !(ofi && cgo && linux)

package ofi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// TestStub: a build without the ofi tag still knows the name, and says
// how to get the provider (RDMACTOR_TRANSPORT=ofi on a default build).
func TestStub(t *testing.T) {
	_, err := rdma.Open(ofi.Name, rdma.Config{Rank: 0, Size: 1, Job: "x"})
	require.ErrorIs(t, err, rdma.ErrNotSupported)
	require.ErrorContains(t, err, "build with -tags ofi")
}
