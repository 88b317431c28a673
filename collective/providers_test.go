package collective

// The providers the tests run on: gin registers none itself.
import _ "github.com/rdmactor/rdmactor/transport/rdma/std"
