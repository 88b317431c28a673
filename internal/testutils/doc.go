// Package testutils holds test helpers shared by rdmactor's packages:
// running a test binary's registered roles as the ranks of a job
// (MainWithRoles, Role, RunRanks), test deadlines (Deadline) and sizes
// (Scale). Package ginlocal beside it starts goroutine ranks over gin.
//
// It may import testing and internal/launch; it must not import the packages
// it helps test (transport/..., internal/bootstrap), so that their in-package
// tests can use it.
package testutils
