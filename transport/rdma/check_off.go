//go:build !rdmacheck

package rdma

// checkBuild: WQEs are checked only with EnvCheckWQEs=1 (Checked).
const checkBuild = false
