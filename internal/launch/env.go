package launch

// Environment variables Run sets for every rank. The names match
// internal/bootstrap (EnvRank, ...), which reads them; they are repeated here
// so that the launcher does not link the control plane.
const (
	EnvRank      = "RDMACTOR_RANK"       // the rank, in [0, WorldSize)
	EnvWorldSize = "RDMACTOR_WORLD_SIZE" // WorldSize: NP on one host
	EnvBootstrap = "RDMACTOR_BOOTSTRAP"  // rank 0's control endpoint, host:port
	EnvTransport = "RDMACTOR_TRANSPORT"  // the rdma provider to use, e.g. "shm"
	EnvJob       = "RDMACTOR_JOB"        // the job name (Options.Job)
	EnvLocalRank = "RDMACTOR_LOCAL_RANK" // the rank's index on this host, in [0, NP)
	EnvLocalSize = "RDMACTOR_LOCAL_SIZE" // NP: the ranks this launcher starts
	// EnvSecret is the job's secret in hex, random per Run on one host
	// unless the caller's environment has one (or EnvSecretFile); across
	// hosts the caller's is required, since all hosts must share it.
	EnvSecret     = "RDMACTOR_JOB_SECRET"
	EnvSecretFile = "RDMACTOR_JOB_SECRET_FILE"
)

// EnvNoPSMBacktrace, set to 1 for every rank unless the caller's
// environment sets it: libinfinipath (PSM, which Debian's libfabric links
// whatever the provider) otherwise installs a SIGSEGV handler when it
// loads, and the Go runtime forwards a crash in C code to it, which prints
// one C frame and writes a .btr file instead of Go's traceback of every
// goroutine and the cgo call that crashed. It is read when the library
// loads, so it must be in the environment the rank starts with.
const EnvNoPSMBacktrace = "IPATH_NO_BACKTRACE"
