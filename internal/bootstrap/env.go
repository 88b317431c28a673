package bootstrap

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
)

// Environment variables ConfigFromEnv reads; cmd/rdmarun (internal/launch)
// sets them, and so may a scheduler.
const (
	EnvRank      = "RDMACTOR_RANK"       // this rank, in [0, world size)
	EnvWorldSize = "RDMACTOR_WORLD_SIZE" // number of ranks
	EnvBootstrap = "RDMACTOR_BOOTSTRAP"  // rank 0's control endpoint, host:port
	EnvJob       = "RDMACTOR_JOB"        // optional job name; default DefaultJob(bootstrap address)
	// EnvSecret is the job's secret in hex (Config.Secret), or
	// EnvSecretFile names a file that holds it and that only its owner may
	// read (mode 0600 or stricter).
	EnvSecret     = "RDMACTOR_JOB_SECRET"
	EnvSecretFile = "RDMACTOR_JOB_SECRET_FILE"
)

// Config is a rank's place in a multi-process job, as ConfigFromEnv reads
// it from the environment; a process-spanning Bootstrap joins the job it
// describes.
type Config struct {
	Rank int // this rank, in [0, Size)
	Size int // number of ranks, >= 1
	// Addr is rank 0's control endpoint, host:port.
	Addr string
	// Job names the job; "" means derived from Addr (DefaultJob).
	Job string
	// Secret is the job's secret, the same on every rank (at least
	// MinSecret bytes): control messages are authenticated with it.
	Secret []byte
}

// MinSecret is the shortest Config.Secret a Bootstrap accepts, in bytes.
const MinSecret = 16

// ConfigFromEnv returns the job the environment describes: from
// RDMACTOR_RANK, RDMACTOR_WORLD_SIZE and RDMACTOR_BOOTSTRAP when
// RDMACTOR_RANK is set, else from the first scheduler whose variables are
// present (schedulerEnv: torchrun's RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT; Slurm's SLURM_PROCID, SLURM_NTASKS and the step's first
// node; Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, with 127.0.0.1 when
// all ranks share this host; PMIx's PMIX_RANK), with
// RDMACTOR_BOOTSTRAP overriding the address a scheduler implies. The job
// secret comes from RDMACTOR_JOB_SECRET or RDMACTOR_JOB_SECRET_FILE. A
// missing or malformed variable is an error naming it.
func ConfigFromEnv() (Config, error) {
	var cfg Config
	var err error
	cfg.Job = os.Getenv(EnvJob)
	from := "rdmactor"
	if os.Getenv(EnvRank) == "" {
		if from, err = schedulerEnv(&cfg); err != nil {
			return cfg, err
		}
	}
	if from == "rdmactor" || from == "" {
		if cfg.Size, err = envInt(EnvWorldSize); err != nil {
			return cfg, err
		}
		if cfg.Rank, err = envInt(EnvRank); err != nil {
			return cfg, err
		}
		cfg.Addr = os.Getenv(EnvBootstrap)
		from = "rdmactor"
	}
	if cfg.Size < 1 {
		return cfg, fmt.Errorf("bootstrap: world size %d (%s, from %s's variables): want >= 1", cfg.Size, EnvWorldSize, from)
	}
	if cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return cfg, fmt.Errorf("bootstrap: rank %d (%s, from %s's variables): want in [0, %d)", cfg.Rank, EnvRank, from, cfg.Size)
	}
	if cfg.Addr == "" {
		return cfg, fmt.Errorf("bootstrap: %s is not set (want host:port of rank 0's control endpoint)", EnvBootstrap)
	}
	if err := CheckAddr(cfg.Addr); err != nil {
		return cfg, fmt.Errorf("bootstrap: %s=%q: want host:port", EnvBootstrap, cfg.Addr)
	}
	if cfg.Secret, err = secretFromEnv(); err != nil {
		return cfg, err
	}
	if cfg.Job != "" {
		if err := CheckJob(cfg.Job); err != nil {
			return cfg, fmt.Errorf("bootstrap: %s: %w", EnvJob, err)
		}
	}
	return cfg, nil
}

func envInt(name string) (int, error) {
	s, ok := os.LookupEnv(name)
	if !ok || s == "" {
		return 0, fmt.Errorf("bootstrap: %s is not set", name)
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("bootstrap: %s=%q: not an integer", name, s)
	}
	return v, nil
}

// DefaultJob is the job name of a job that names none: "j" and 16 hex
// digits of a hash of its bootstrap address.
func DefaultJob(addr string) string {
	h := fnv.New64a()
	h.Write([]byte(addr))
	return fmt.Sprintf("j%016x", h.Sum64())
}

// CheckJob accepts job names of 1 to 64 characters from [A-Za-z0-9._-]
// that do not start with a dot (they become part of file names); otherwise
// it returns an error naming the rule.
func CheckJob(job string) error {
	if job == "" || len(job) > 64 || job[0] == '.' {
		return fmt.Errorf("job name %q: want 1 to 64 characters of [A-Za-z0-9._-], not starting with '.'", job)
	}
	for _, c := range job {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("job name %q: character %q not in [A-Za-z0-9._-]", job, c)
		}
	}
	return nil
}

// CheckAddr accepts a control endpoint address of the form host:port, with
// a non-empty host and a decimal port below 65536; otherwise it returns an
// error naming addr.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" {
		return fmt.Errorf("address %q: want host:port", addr)
	}
	return nil
}

// secretFromEnv reads the job secret from EnvSecret, or from the file
// EnvSecretFile names.
func secretFromEnv() ([]byte, error) {
	h := strings.TrimSpace(os.Getenv(EnvSecret))
	if f := os.Getenv(EnvSecretFile); h == "" && f != "" {
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: %s: %w", EnvSecretFile, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("bootstrap: %s=%s: mode %v, want no access for group and others (chmod 600)", EnvSecretFile, f, st.Mode().Perm())
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bootstrap: %s: %w", EnvSecretFile, err)
		}
		h = strings.TrimSpace(string(b))
	}
	if h == "" {
		return nil, fmt.Errorf("bootstrap: no job secret: set %s (hex, e.g. openssl rand -hex 32, the same on every rank) or %s; rdmarun sets it", EnvSecret, EnvSecretFile)
	}
	s, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %s: not hex", EnvSecret)
	}
	return s, nil
}
