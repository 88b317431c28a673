package gin

import "github.com/rdmactor/rdmactor/internal/bootstrap"

// Bootstrap is the control plane a Comm is built on: collective exchange of
// descriptors and notices of lost ranks (see the method docs). Init uses
// the launcher's (protoactor-go remote over gRPC); NewLocal uses an
// in-process one; NewComm takes any implementation.
type Bootstrap = bootstrap.Bootstrap
