package bootstrap

import (
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
)

// The schedulers' own variables, read when RDMACTOR_RANK is not set, in
// this order: torchrun (torch.distributed.run), Slurm (srun), Open MPI
// (mpirun), PMIx. The first whose rank variable is set is used.
const (
	envTorchRank, envTorchSize = "RANK", "WORLD_SIZE"
	envTorchAddr, envTorchPort = "MASTER_ADDR", "MASTER_PORT"
	envTorchRunID              = "TORCHELASTIC_RUN_ID"
	envSlurmRank, envSlurmSize = "SLURM_PROCID", "SLURM_NTASKS"
	envSlurmNodes, envSlurmJob = "SLURM_STEP_NODELIST", "SLURM_JOB_ID"
	envSlurmJobNodes           = "SLURM_JOB_NODELIST"
	envSlurmStep               = "SLURM_STEP_ID"
	envMPIRank, envMPISize     = "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"
	envMPILocalSize            = "OMPI_COMM_WORLD_LOCAL_SIZE"
	envMPIJob                  = "OMPI_MCA_ess_base_jobid"
	envPMIxRank                = "PMIX_RANK"
	envPMIxNamespace           = "PMIX_NAMESPACE"

	// EnvPort is the bootstrap port where a scheduler names only a host
	// (Slurm: the step's first node); default DefaultPort.
	EnvPort = "RDMACTOR_PORT"
)

// DefaultPort is the bootstrap port when a scheduler gives a host only and
// RDMACTOR_PORT is not set; Slurm and Open MPI jobs add their job id modulo
// 1000, so that concurrent jobs on one host do not collide.
const DefaultPort = 29400

// schedulerEnv fills rank, size, address and job from the first
// scheduler whose variables are present, and names it; "" when none is.
// RDMACTOR_BOOTSTRAP, when set, overrides the address a scheduler implies.
func schedulerEnv(cfg *Config) (string, error) {
	get := os.Getenv
	addr := get(EnvBootstrap)
	switch {
	case get(envTorchRank) != "":
		if addr == "" && get(envTorchAddr) != "" {
			addr = net.JoinHostPort(get(envTorchAddr), get(envTorchPort))
		}
		return "torchrun", fill(cfg, envTorchRank, envTorchSize, addr, get(envTorchRunID))
	case get(envSlurmRank) != "":
		if addr == "" {
			nodes := get(envSlurmNodes)
			if nodes == "" {
				nodes = get(envSlurmJobNodes)
			}
			host, err := firstHost(nodes)
			if err != nil {
				return "slurm", err
			}
			port := get(EnvPort)
			if port == "" {
				id, _ := strconv.Atoi(get(envSlurmJob))
				port = strconv.Itoa(DefaultPort + id%1000)
			}
			addr = net.JoinHostPort(host, port)
		}
		job := ""
		if id := get(envSlurmJob); id != "" {
			job = "slurm-" + id + "." + get(envSlurmStep)
		}
		return "slurm", fill(cfg, envSlurmRank, envSlurmSize, addr, job)
	case get(envMPIRank) != "":
		job := get(envMPIJob)
		if job == "" {
			job = get(envPMIxNamespace)
		}
		// All ranks on this host (mpirun without --host): rank 0 is here.
		// Across hosts mpirun does not say where rank 0 runs.
		if addr == "" && get(envMPILocalSize) != "" && get(envMPILocalSize) == get(envMPISize) {
			port := get(EnvPort)
			if port == "" {
				h := fnv.New32a()
				h.Write([]byte(job))
				port = strconv.Itoa(DefaultPort + int(h.Sum32()%1000))
			}
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		if job != "" {
			job = "ompi-" + job
		}
		return "open mpi", fill(cfg, envMPIRank, envMPISize, addr, job)
	case get(envPMIxRank) != "":
		size := envMPISize
		if get(size) == "" {
			size = EnvWorldSize
		}
		return "pmix", fill(cfg, envPMIxRank, size, addr, get(envPMIxNamespace))
	}
	return "", nil
}

// fill sets cfg from the named rank and size variables and addr.
func fill(cfg *Config, rankVar, sizeVar, addr, job string) error {
	var err error
	if cfg.Size, err = envInt(sizeVar); err != nil {
		return err
	}
	if cfg.Rank, err = envInt(rankVar); err != nil {
		return err
	}
	if addr == "" {
		return fmt.Errorf("bootstrap: %s is set but no rendezvous address: set %s (host:port of rank 0)", rankVar, EnvBootstrap)
	}
	cfg.Addr = addr
	if cfg.Job == "" && job != "" {
		cfg.Job = sanitizeJob(job)
	}
	return nil
}

// sanitizeJob maps a scheduler's job id onto the job name alphabet.
func sanitizeJob(id string) string {
	b := []byte(id)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), ".")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// firstHost is the first host of a Slurm hostlist ("node[01-04,07],gpu3"
// gives "node01"), the node of rank 0 under Slurm's default block
// distribution.
func firstHost(list string) (string, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return "", fmt.Errorf("bootstrap: Slurm: %s and %s are empty: set %s", envSlurmNodes, envSlurmJobNodes, EnvBootstrap)
	}
	end := len(list)
	depth := 0
	for i, c := range list { // the first comma outside brackets ends the first entry
		if c == '[' {
			depth++
		} else if c == ']' {
			depth--
		} else if c == ',' && depth == 0 {
			end = i
			break
		}
	}
	entry := list[:end]
	open := strings.IndexByte(entry, '[')
	if open < 0 {
		return entry, nil
	}
	close := strings.IndexByte(entry, ']')
	if close < open {
		return "", fmt.Errorf("bootstrap: Slurm hostlist %q: unbalanced brackets", list)
	}
	first := entry[open+1 : close]
	if i := strings.IndexAny(first, ",-"); i >= 0 {
		first = first[:i]
	}
	return entry[:open] + first + entry[close+1:], nil
}
