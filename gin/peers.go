package gin

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// setPeers fixes the peer set from c.cfg.Peers, before any collective:
// c.peers is the sorted set with this rank, c.slot maps a world rank to
// its index in it. Both stay nil for a Comm without Config.Peers (every
// rank a peer, slot = rank). Duplicates and this rank are ignored; a rank
// outside the world fails.
func (c *Comm) setPeers() error {
	c.slots = c.size
	if c.cfg.Peers == nil {
		return nil
	}
	set := []int{c.rank}
	for _, p := range c.cfg.Peers {
		if p < 0 || p >= c.size {
			return fmt.Errorf("new comm: Config.Peers names rank %d, outside the world of %d: %w: %w", p, c.size, ErrBadArgument, ErrPeerOutOfRange)
		}
		set = append(set, p)
	}
	slices.Sort(set)
	c.peers = slices.Compact(set)
	c.slot = make([]int32, c.size)
	for r := range c.slot {
		c.slot[r] = -1
	}
	for i, p := range c.peers {
		c.slot[p] = int32(i)
	}
	c.slots = len(c.peers)
	return nil
}

// slotOf is world rank r's index in the per-peer arrays (Window.remotes,
// Context.groups): r itself without a peer set, else its place in it, or
// ErrNotPeer. r must be a rank of the world.
func (c *Comm) slotOf(r int) (int, error) {
	if c.slot == nil {
		return r, nil
	}
	if s := c.slot[r]; s >= 0 {
		return int(s), nil
	}
	return 0, fmt.Errorf("world rank %d (this rank %d): %w", r, c.rank, ErrNotPeer)
}

// Peers is the sorted world ranks this rank may address, itself included:
// Config.Peers with duplicates dropped and this rank added, or every rank
// of the world when Config.Peers is nil. The caller may modify it.
func (c *Comm) Peers() []int {
	if c.peers == nil {
		all := make([]int, c.size)
		for r := range all {
			all[r] = r
		}
		return all
	}
	return slices.Clone(c.peers)
}

// IsPeer reports whether world rank r is in this rank's peer set
// (Config.Peers; every rank of the world when it is nil).
func (c *Comm) IsPeer(r int) bool {
	if r < 0 || r >= c.size {
		return false
	}
	return c.slot == nil || c.slot[r] >= 0
}

// CheckTeam reports whether every member of t can be addressed from this
// rank: ErrPeerOutOfRange for a team that does not fit the world, and
// ErrNotPeer naming the first member outside the peer set. Layers that
// build on a team (package barrier's sessions) call it at creation, so a
// team over ranks this rank never connected to fails there rather than at
// its first post.
func (c *Comm) CheckTeam(t Team) error {
	for p := range max(t.NRanks, 1) {
		r, err := t.worldRank(c.rank, c.size, p)
		if err != nil {
			return err
		}
		if _, err := c.slotOf(r); err != nil {
			return fmt.Errorf("team {rank %d, nranks %d, stride %d}: member %d: %w", t.Rank, t.NRanks, t.Stride, p, err)
		}
	}
	return nil
}

// hello is this rank's part of NewComm's first exchange: its host identity,
// its peer set and the processors it may run on, so that each rank learns
// the hosts and how many processors their ranks share (Oversubscribed),
// and every rank checks the peer sets' symmetry in the same round.
// Layout: uvarint len(host), host, then uvarint 0 for every rank or n+1
// followed by n uvarint ranks (sorted, this rank left out), then uvarint
// len(cpus) and cpus, the affinity bitmap (empty: unknown).
func (c *Comm) hello(host string, cpus []byte) []byte {
	b := binary.AppendUvarint(nil, uint64(len(host)))
	b = append(b, host...)
	if c.peers == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, uint64(len(c.peers)))
		for _, p := range c.peers {
			if p != c.rank {
				b = binary.AppendUvarint(b, uint64(p))
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(cpus)))
	return append(b, cpus...)
}

// helloMsg is a decoded hello.
type helloMsg struct {
	host  string
	peers []int  // nil: every rank; else sorted, without the sender
	cpus  []byte // affinity bitmap; nil: unknown
}

// readHello decodes rank r's hello; every declared length is checked
// against the bytes present.
func readHello(r, size int, b []byte) (helloMsg, error) {
	bad := fmt.Errorf("rank %d's host and peer exchange is malformed: %w", r, ErrBadArgument)
	var h helloMsg
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return h, bad
	}
	h.host, b = string(b[k:k+int(n)]), b[k+int(n):]
	cnt, k := binary.Uvarint(b)
	if k <= 0 || cnt > uint64(size) {
		return h, bad
	}
	b = b[k:]
	if cnt > 0 {
		h.peers = make([]int, 0, cnt-1)
		for range cnt - 1 {
			p, k := binary.Uvarint(b)
			if k <= 0 || p >= uint64(size) {
				return h, bad
			}
			h.peers, b = append(h.peers, int(p)), b[k:]
		}
	}
	n, k = binary.Uvarint(b)
	if k <= 0 || n > maxCPUSetBytes || uint64(len(b)-k) != n {
		return h, bad
	}
	if n > 0 {
		h.cpus = b[k:]
	}
	return h, nil
}

// checkSymmetric fails when some rank lists a peer that does not list it
// back: a put of the first would find no import at the second. Every rank
// checks every pair, so all of them fail NewComm alike. sets[r] is rank
// r's peer set (nil: every rank; else sorted). It costs O(sum of the sets'
// sizes times log), not O(world^2): a rank without a set must be in every
// set, which a count of such ranks per set decides.
func checkSymmetric(sets [][]int) error {
	everyone := 0 // ranks without a set: they list every rank
	for _, s := range sets {
		if s == nil {
			everyone++
		}
	}
	for a, s := range sets {
		if s == nil {
			continue
		}
		found := 0
		for _, b := range s {
			if sets[b] == nil {
				found++
				continue
			}
			if _, ok := slices.BinarySearch(sets[b], a); !ok {
				return asymmetric(a, b)
			}
		}
		if found < everyone {
			for b := range sets { // the slow path names the pair, once
				if _, ok := slices.BinarySearch(s, b); sets[b] == nil && b != a && !ok {
					return asymmetric(b, a)
				}
			}
		}
	}
	return nil
}

func asymmetric(a, b int) error {
	return fmt.Errorf("peer sets: rank %d lists rank %d as a peer but rank %d does not list rank %d (Config.Peers must be symmetric): %w",
		a, b, b, a, ErrBadArgument)
}

// shrunkPeers is a peer set of a Comm's ranks as ranks of the Comm Shrink
// made from it, where parents[i] is the old rank of new rank i; nil stays
// nil (every rank).
func shrunkPeers(old []int, parents []int) []int {
	if old == nil {
		return nil
	}
	out := []int{}
	for i, p := range parents {
		if _, ok := slices.BinarySearch(old, p); ok {
			out = append(out, i)
		}
	}
	return out
}
