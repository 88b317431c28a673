package remote

import (
	"fmt"
	"net"
	"time"

	"github.com/rdmactor/rdmactor/internal/bootstrap"
)

// Config configures New.
type Config struct {
	// Config is the job and this rank's place in it, as
	// bootstrap.ConfigFromEnv reads it. Rank 0 listens on Addr (the port
	// must be free); the others connect to it. Secret is required: every
	// control message is sealed with a key derived from it, and messages
	// that are not are refused.
	bootstrap.Config
	// Host is the host this rank (other than 0) listens on and is reached
	// at; default 127.0.0.1 when Addr is a loopback address, otherwise the
	// local address of the interface that routes to Addr.
	Host string
	// ConnectTimeout bounds the wait for all ranks to join; default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

func (cfg Config) withDefaults() (Config, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return cfg, fmt.Errorf("bootstrap: rank %d of size %d out of range", cfg.Rank, cfg.Size)
	}
	if err := bootstrap.CheckAddr(cfg.Addr); err != nil {
		return cfg, fmt.Errorf("bootstrap: %w", err)
	}
	if cfg.Job == "" {
		cfg.Job = bootstrap.DefaultJob(cfg.Addr)
	}
	if err := bootstrap.CheckJob(cfg.Job); err != nil {
		return cfg, fmt.Errorf("bootstrap: %w", err)
	}
	if len(cfg.Secret) < bootstrap.MinSecret {
		return cfg, fmt.Errorf("bootstrap: job secret of %d bytes, want at least %d (rdmarun makes one; other launchers set %s to %d random bytes in hex, the same on every rank, e.g. openssl rand -hex 32)",
			len(cfg.Secret), bootstrap.MinSecret, bootstrap.EnvSecret, 32)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.Host == "" && cfg.Rank != 0 {
		cfg.Host = localHostFor(cfg.Addr)
	}
	return cfg, nil
}

// localHostFor returns the host a rank listens on to be reached from addr's
// side: loopback for a loopback addr, else the routing interface's address.
func localHostFor(addr string) string {
	host, _, _ := net.SplitHostPort(addr)
	if host == "localhost" {
		return "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return host
	}
	c, err := net.Dial("udp", addr) // sends nothing; picks the route
	if err != nil {
		return "127.0.0.1"
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).IP.String()
}
