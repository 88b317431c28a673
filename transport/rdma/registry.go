package rdma

import (
	"fmt"
	"sort"
	"sync"
)

// OpenFunc opens a provider for one rank.
type OpenFunc func(cfg Config) (Provider, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]OpenFunc{}
)

// Register makes a provider available to Open under name. Providers call it
// from init; registering one name twice panics (a programming error).
func Register(name string, open OpenFunc) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("rdma: provider registered twice: " + name)
	}
	registry[name] = open
}

// Open opens the provider registered under name. An unknown name returns an
// *UnsupportedError that lists the providers of this build.
func Open(name string, cfg Config) (Provider, error) {
	registryMu.RLock()
	open, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, &UnsupportedError{Provider: name, Feature: fmt.Sprintf(
			"provider not registered (have %v; import _ \"github.com/rdmactor/rdmactor/transport/rdma/std\" or the provider's package)", Providers())}
	}
	if cfg.Size <= 0 || cfg.Rank < 0 || cfg.Rank >= cfg.Size {
		return nil, fmt.Errorf("open %s: rank %d of size %d: invalid", name, cfg.Rank, cfg.Size)
	}
	return open(cfg)
}

// Providers lists the registered provider names, sorted.
func Providers() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
