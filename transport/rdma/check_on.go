//go:build rdmacheck

package rdma

// checkBuild: this build checks every WQE (Checked), the debug build.
const checkBuild = true
