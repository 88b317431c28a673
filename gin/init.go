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
	EnvTransport = "RDMACTOR_TRANSPORT"  // provider name; default "shm"
	EnvJob       = "RDMACTOR_JOB"        // job name; default derived from EnvBootstrap
)

// Init builds this process's Comm from the environment set by cmd/rdmarun
// or a scheduler: the bootstrap connects to rank 0 (protoactor-go remote
// over gRPC) and cfg.Transport defaults to RDMACTOR_TRANSPORT. Collective
// over the job's processes. Missing or malformed variables are an error
// naming the variable.
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

// NewLocal builds n Comms whose ranks are goroutines of this process, over
// an in-process bootstrap and the same providers as separate processes use
// (shm maps the same files). For tests, examples and the quickstart.
func NewLocal(ctx context.Context, n int, cfg Config) ([]*Comm, error) {
	if n <= 0 {
		return nil, fmt.Errorf("new local comms: %d ranks: %w", n, ErrBadArgument)
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
			comms[r], errs[r] = NewComm(ctx, boots[r], cfg)
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
