package gin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// Environment variables Init reads; cmd/rdmarun sets them, and so can a
// cluster scheduler (Slurm, Kubernetes), as with torchrun.
const (
	EnvRank      = "RDMACTOR_RANK"       // this process's world rank
	EnvSize      = "RDMACTOR_WORLD_SIZE" // number of ranks
	EnvBootstrap = "RDMACTOR_BOOTSTRAP"  // host:port of rank 0's control endpoint
	EnvTransport = "RDMACTOR_TRANSPORT"  // provider name; default "auto" where registered, else "shm"
	EnvJob       = "RDMACTOR_JOB"        // job name; default derived from EnvBootstrap
)

// Init builds this process's Comm from the environment set by cmd/rdmarun
// or a scheduler: the registered Bootstrap (RegisterBootstrap; importing
// transport/rdma/std registers the usual one, which connects to rank 0 over
// gRPC) joins the job, and cfg.Transport defaults to RDMACTOR_TRANSPORT.
// Rank, world size and rank 0's address come from RDMACTOR_RANK,
// RDMACTOR_WORLD_SIZE and RDMACTOR_BOOTSTRAP when RDMACTOR_RANK is set,
// else from torchrun's (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT),
// Slurm's (SLURM_PROCID, SLURM_NTASKS, the step's first node with
// RDMACTOR_PORT), Open MPI's (OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE)
// or PMIx's (PMIX_RANK), in that order, with RDMACTOR_BOOTSTRAP overriding
// a scheduler's address. Every rank needs the job's secret
// (RDMACTOR_JOB_SECRET, hex, or RDMACTOR_JOB_SECRET_FILE); rdmarun makes
// one. Collective over the job's processes. Missing or malformed variables
// are an error naming the variable; with no Bootstrap registered the error
// names the package to import.
func Init(ctx context.Context, cfg Config) (*Comm, error) {
	if cfg.Transport == "" {
		cfg.Transport = os.Getenv(EnvTransport)
	}
	boot, err := bootstrap.FromEnv(ctx)
	if err != nil {
		return nil, fmt.Errorf("gin init: %w", err)
	}
	c, err := NewComm(ctx, boot, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("gin init: %w", err), boot.Close())
	}
	return c, nil
}

// SizeFromEnv is the world size Init would join with: RDMACTOR_WORLD_SIZE,
// or the scheduler's (torchrun, Slurm, Open MPI, PMIx; see Init). Layers
// that size their signals before Init (package actor) read it here.
func SizeFromEnv() (int, error) {
	cfg, err := bootstrap.ConfigFromEnv()
	if err != nil {
		return 0, fmt.Errorf("gin: %w", err)
	}
	return cfg.Size, nil
}

// NewLocal builds n Comms whose ranks are goroutines of this process, over
// an in-process bootstrap and the same providers as separate processes use
// (shm maps the same files). For tests, examples and the quickstart.
func NewLocal(ctx context.Context, n int, cfg Config) ([]*Comm, error) {
	if n <= 0 {
		return nil, fmt.Errorf("new local comms: %d ranks: %w", n, ErrBadArgument)
	}
	hosts := make([]string, n)
	for r := range hosts {
		hosts[r] = hostID()
	}
	return NewLocalOnHosts(ctx, hosts, cfg)
}

// NewLocalOnHosts is NewLocal with rank r on host hosts[r], whatever host
// this process runs on: tests of the "auto" provider give goroutine ranks
// distinct host identities (A, A, B, B: shm within each pair, ofi between
// them), as RDMACTOR_HOST_ID does for processes. An empty hosts is
// ErrBadArgument.
func NewLocalOnHosts(ctx context.Context, hosts []string, cfg Config) ([]*Comm, error) {
	n := len(hosts)
	if n == 0 {
		return nil, fmt.Errorf("new local comms: no ranks: %w", ErrBadArgument)
	}
	var id [6]byte
	rand.Read(id[:])
	boots := bootstrap.NewLocal(fmt.Sprintf("l%d-%s", os.Getpid(), hex.EncodeToString(id[:])), n)
	comms := make([]*Comm, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range boots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comms[r], errs[r] = newComm(ctx, boots[r], cfg, hosts[r], n > 1)
			if errs[r] != nil {
				boots[r].Close() // unblock the others' collectives
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range comms {
			if c != nil {
				c.Close()
			}
		}
		return nil, fmt.Errorf("new local comms: %w", err)
	}
	return comms, nil
}
