// Package std registers the usual rdma providers: shm (the default, pure
// Go) and ofi (libfabric; without the ofi build tag a stub that tells
// RDMACTOR_TRANSPORT=ofi users to build with it). gin chooses no provider
// itself, as database/sql chooses no driver: a program that uses gin
// directly imports this package, or the providers it wants, for their
// side effect of registering:
//
//	import _ "github.com/rdmactor/rdmactor/transport/rdma/std"
//
// Package actor imports it, so actor programs need nothing more.
package std

import (
	_ "github.com/rdmactor/rdmactor/transport/rdma/ofi" // libfabric (build tag ofi; a stub that says so otherwise)
	_ "github.com/rdmactor/rdmactor/transport/rdma/shm" // the default provider
)
