//go:build !(ofi && cgo && linux)

package ofi

import "github.com/rdmactor/rdmactor/transport/rdma"

func init() { rdma.Register(Name, Open) }

// Name is the provider's registered name (RDMACTOR_TRANSPORT=ofi).
const Name = "ofi"

// Open fails in a build without the ofi provider: it returns an
// *rdma.UnsupportedError (matching rdma.ErrNotSupported) saying how to get
// one, so RDMACTOR_TRANSPORT=ofi on a default build is a clear error
// rather than "provider not in this build".
func Open(rdma.Config) (rdma.Provider, error) {
	return nil, &rdma.UnsupportedError{Provider: Name, Feature: "build with -tags ofi (cgo, libfabric-dev)"}
}
