// Package std registers the usual rdma providers, shm (pure Go), ofi
// (libfabric; without the ofi build tag a stub that tells
// RDMACTOR_TRANSPORT=ofi users to build with it) and auto (the default:
// shm between ranks of one host, ofi between hosts), and the usual
// multi-process bootstrap that gin.Init joins a job with (protoactor-go
// remote over gRPC). gin chooses neither itself, as database/sql chooses
// no driver: a program that uses gin directly imports this package for
// its side effect of registering them (a program that runs no
// multi-process job may import only the providers it wants):
//
//	import _ "github.com/rdmactor/rdmactor/transport/rdma/std"
//
// Package actor imports it, so actor programs need nothing more.
package std

import (
	_ "github.com/rdmactor/rdmactor/internal/bootstrap/remote" // gin.Init's bootstrap: protoactor-go remote (gRPC)
	_ "github.com/rdmactor/rdmactor/transport/rdma/hybrid"     // auto, the default: shm within a host, ofi between hosts
	_ "github.com/rdmactor/rdmactor/transport/rdma/ofi"        // libfabric (build tag ofi; a stub that says so otherwise)
	_ "github.com/rdmactor/rdmactor/transport/rdma/shm"        // ranks of one host
)
