package bootstrap

import (
	"fmt"
	"net"
	"strconv"
	"time"
)

// RemoteConfig configures NewRemote.
type RemoteConfig struct {
	Rank int // this rank, in [0, Size)
	Size int // number of ranks, >= 1
	// Addr is rank 0's control endpoint, host:port. Rank 0 listens on it
	// (the port must be free); the others connect to it.
	Addr string
	// Job names the job; default: derived from Addr (DefaultJob).
	Job string
	// Host is the host this rank (other than 0) listens on and is reached
	// at; default 127.0.0.1 when Addr is a loopback address, otherwise the
	// local address of the interface that routes to Addr.
	Host string
	// ConnectTimeout bounds the wait for all ranks to join; default
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Secret is the job's secret, the same on every rank (at least 16
	// bytes): every control message is sealed with a key derived from it,
	// and messages that are not are refused. Required.
	Secret []byte
}

// MinSecret is the shortest RemoteConfig.Secret accepted, in bytes.
const MinSecret = 16

func (cfg RemoteConfig) withDefaults() (RemoteConfig, error) {
	if cfg.Size < 1 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return cfg, fmt.Errorf("bootstrap: rank %d of size %d out of range", cfg.Rank, cfg.Size)
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return cfg, fmt.Errorf("bootstrap: address %q: %w", cfg.Addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil || host == "" {
		return cfg, fmt.Errorf("bootstrap: address %q: want host:port", cfg.Addr)
	}
	if cfg.Job == "" {
		cfg.Job = DefaultJob(cfg.Addr)
	}
	if err := checkJob(cfg.Job); err != nil {
		return cfg, fmt.Errorf("bootstrap: %w", err)
	}
	if len(cfg.Secret) < MinSecret {
		return cfg, fmt.Errorf("bootstrap: job secret of %d bytes, want at least %d (rdmarun makes one; other launchers set %s to %d random bytes in hex, the same on every rank, e.g. openssl rand -hex 32)",
			len(cfg.Secret), MinSecret, EnvSecret, 32)
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
