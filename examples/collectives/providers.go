package main

// The providers this program may run on (RDMACTOR_TRANSPORT).
import _ "github.com/rdmactor/rdmactor/transport/rdma/std"
