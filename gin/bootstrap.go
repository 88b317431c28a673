package gin

import (
	"context"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// Bootstrap is the control plane a Comm is built on: collective exchange of
// descriptors and notices of lost ranks (see the method docs). Init uses the
// registered one (RegisterBootstrap); NewLocal uses an in-process one;
// NewComm takes any implementation.
type Bootstrap = bootstrap.Bootstrap

// RegisterBootstrap makes a process-spanning Bootstrap available to Init
// under name: fromEnv joins the job the environment describes and returns
// this rank's Bootstrap. gin links no control-plane transport, as
// database/sql links no driver: the implementing package calls this from
// init, and a program picks it by importing that package. Package
// transport/rdma/std imports the usual one (protoactor-go remote over
// gRPC), so programs that import std, or package actor, need nothing more.
// Init fails when none or more than one is registered. RegisterBootstrap
// panics if name is empty or already registered, or fromEnv is nil.
func RegisterBootstrap(name string, fromEnv func(ctx context.Context) (Bootstrap, error)) {
	bootstrap.Register(name, fromEnv)
}
