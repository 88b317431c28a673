// Package launch starts the ranks of a job as processes on this host, the
// way cmd/rdmarun (and torchrun or mpirun) does.
//
// Run gives every rank the variables that bootstrap.FromEnv reads
// (RDMACTOR_RANK, RDMACTOR_WORLD_SIZE, RDMACTOR_BOOTSTRAP, RDMACTOR_JOB),
// RDMACTOR_TRANSPORT and its place on this host (RDMACTOR_LOCAL_RANK,
// RDMACTOR_LOCAL_SIZE); it may start part of a job whose other ranks other
// launchers start on other hosts (Options.WorldSize, RankBase). It
// forwards each rank's output line by line prefixed with "[<rank>] ", waits
// for all ranks, and removes the job's leftovers through Options.Cleanup.
//
// Each rank runs in its own process group, so that a kill reaches the
// processes it started; when a rank exits, what is left of its group is
// killed. On Linux a rank is also killed if the launcher dies. What Run does
// not promise: that a rank's grandchildren that left its process group are
// found, or that output a rank writes after it exits is forwarded.
package launch
