package gin

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// EnvHostID overrides the host identity of a rank (tests that stand two
// network namespaces for two hosts give each its own).
const EnvHostID = "RDMACTOR_HOST_ID"

// hostID names the host this process runs on: EnvHostID if set, else the
// hostname and the kernel's boot id (proc(5), /proc/sys/kernel/random/
// boot_id), so two containers with one hostname on different machines
// differ, and one machine's ranks agree.
func hostID() string {
	if id := os.Getenv(EnvHostID); id != "" {
		return id
	}
	name, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return name + "/" + strings.TrimSpace(string(boot))
}

// countLocal learns, with a control-plane all-gather, how many ranks share
// this rank's host. Collective.
func (c *Comm) countLocal(ctx context.Context) error {
	me := hostID()
	all, err := c.boot.AllGather(ctx, []byte(me))
	if err != nil {
		return fmt.Errorf("exchange host ids: %w", err)
	}
	n := 0
	for _, id := range all {
		if string(id) == me {
			n++
		}
	}
	c.local = n
	return nil
}

// LocalRanks is the number of ranks on this rank's host (this one
// included), as the ranks' host identities say: hostname and boot id, or
// RDMACTOR_HOST_ID.
func (c *Comm) LocalRanks() int { return c.local }

// Oversubscribed reports whether this host runs more ranks than it has
// processors (runtime.NumCPU): waits then block at once rather than spin,
// since a spinning rank takes the processor the rank it waits for needs.
func (c *Comm) Oversubscribed() bool { return c.local > runtime.NumCPU() }
