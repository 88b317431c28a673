package launch

// Environment variables Run sets for every rank. The names match
// internal/bootstrap (EnvRank, ...), which reads them; they are repeated here
// so that the launcher does not link the control plane.
const (
	EnvRank      = "RDMACTOR_RANK"       // the rank, in [0, NP)
	EnvWorldSize = "RDMACTOR_WORLD_SIZE" // NP
	EnvBootstrap = "RDMACTOR_BOOTSTRAP"  // rank 0's control endpoint, host:port
	EnvTransport = "RDMACTOR_TRANSPORT"  // the rdma provider to use, e.g. "shm"
	EnvJob       = "RDMACTOR_JOB"        // the job name, unique per Run
	// EnvSecret is the job's secret in hex, random per Run unless the
	// caller's environment has one (or EnvSecretFile).
	EnvSecret     = "RDMACTOR_JOB_SECRET"
	EnvSecretFile = "RDMACTOR_JOB_SECRET_FILE"
)
