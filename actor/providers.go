package actor

// An actor program runs on whichever provider RDMACTOR_TRANSPORT names:
// the actor package registers the usual ones, so that programs import
// nothing more.
import _ "github.com/rdmactor/rdmactor/transport/rdma/std"
