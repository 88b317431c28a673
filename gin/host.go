package gin

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rdmactor/rdmactor/transport/rdma"
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

// gatherHosts learns every rank's host identity (me is this rank's) with a
// control-plane all-gather, and so how many ranks share this rank's host;
// the same exchange carries every rank's peer set (Config.Peers), whose
// symmetry it checks. Collective; NewComm runs it before it opens the
// provider, which picks a transport per peer from the result
// (rdma.Config.Hosts).
func (c *Comm) gatherHosts(ctx context.Context, me string) error {
	all, err := c.boot.AllGather(ctx, c.hello(me, cpuSet()))
	if err != nil {
		return fmt.Errorf("exchange host ids: %w", err)
	}
	c.hosts = make([]string, len(all))
	sets := make([][]int, len(all))
	var cpus [][]byte
	for r, b := range all {
		h, err := readHello(r, len(all), b)
		if err != nil {
			return err
		}
		c.hosts[r], sets[r] = h.host, h.peers
		if h.host == me {
			cpus = append(cpus, h.cpus)
		}
	}
	c.local, c.cpus = len(cpus), hostCPUs(cpus)
	return checkSymmetric(sets)
}

// hostBlock is the LSA size the hosts give, as NCCL's LSA team is the
// ranks of one node: k when the world is consecutive blocks of k ranks,
// each block one host and no host in two blocks; else 1.
func hostBlock(hosts []string) int {
	k := 1
	for k < len(hosts) && hosts[k] == hosts[0] {
		k++
	}
	if len(hosts) == 0 || len(hosts)%k != 0 {
		return 1
	}
	seen := map[string]bool{}
	for b := 0; b < len(hosts); b += k {
		if seen[hosts[b]] {
			return 1
		}
		seen[hosts[b]] = true
		for _, h := range hosts[b : b+k] {
			if h != hosts[b] {
				return 1
			}
		}
	}
	return k
}

// LocalRanks is the number of ranks on this rank's host (this one
// included), as the ranks' host identities say: hostname and boot id, or
// RDMACTOR_HOST_ID.
func (c *Comm) LocalRanks() int { return c.local }

// Oversubscribed reports whether this host runs more ranks than the
// processors they may run on (the union of the host's ranks' affinity
// sets: ranks bound to cores of their own are not oversubscribed, ranks
// confined together to fewer processors are): waits then spin only
// briefly and yield the processor to any runnable thread before they
// block (OversubscribedIdle), since a spinning rank takes the processor
// the rank it waits for needs.
func (c *Comm) Oversubscribed() bool { return c.local > c.cpus }

// defaultTransport is the provider of a Config without Transport: "auto"
// (transport/rdma/hybrid: shm within a host, ofi between hosts) where the
// program registered it, as transport/rdma/std does, else "shm".
func defaultTransport() string {
	if slices.Contains(rdma.Providers(), "auto") {
		return "auto"
	}
	return "shm"
}
