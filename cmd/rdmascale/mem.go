package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/actor"
	"github.com/rdmactor/rdmactor/mailbox"
)

// usage is what memory one rank holds, in bytes (see the package doc).
type usage struct {
	ShmCommitted     float64 // pages of the rank's shared-memory files
	MailboxCommitted float64 // of which, the mailbox window's
	Mapped           float64 // shared-memory files mapped (own and imported)
	Maps             float64 // mappings of them (vm.max_map_count bounds the process's)
	Heap             float64
	RSS, PSS         float64
}

// memory records the mem_* figures of phase: with goroutine ranks rank 0
// reads the process once; with processes every rank reads its own and rank
// 0 records the mean.
func (j *job) memory(ctx context.Context, phase string, node *actor.Node) error {
	window := mailbox.WindowBytes(j.n, node.Mailbox().Config().RingBytes)
	var u usage
	heapMax := 0.0 // the largest rank's: rank 0 serves the control plane
	if j.mode == "goroutine" {
		if j.me != 0 {
			return nil
		}
		u = measure(-1, window, j.n)
	} else {
		all, err := j.c.AllGather(ctx, mustJSON(measure(j.me, window, 1)))
		if err != nil {
			return err
		}
		for _, b := range all {
			var v usage
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			u.ShmCommitted += v.ShmCommitted / float64(j.n)
			u.MailboxCommitted += v.MailboxCommitted / float64(j.n)
			u.Mapped += v.Mapped / float64(j.n)
			u.Maps += v.Maps / float64(j.n)
			u.Heap += v.Heap / float64(j.n)
			heapMax = max(heapMax, v.Heap)
			u.RSS += v.RSS / float64(j.n)
			u.PSS += v.PSS / float64(j.n)
		}
		if j.me != 0 {
			return nil
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"shm_committed", u.ShmCommitted}, {"mailbox_committed", u.MailboxCommitted},
		{"mapped", u.Mapped}, {"maps", u.Maps}, {"mailbox_window", float64(window)},
		{"heap", u.Heap}, {"rss", u.RSS}, {"pss", u.PSS},
	} {
		unit := "B"
		if f.name == "maps" {
			unit = "count"
		}
		j.add("mem_"+f.name+"_"+phase, 0, f.v, unit)
	}
	if heapMax > 0 {
		j.add("mem_heap_max_"+phase, 0, heapMax, "B")
	}
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// measure reads this process: the shared-memory files of rank (all ranks'
// for rank < 0) and the process-wide figures, divided by share.
func measure(rank int, window, share int) usage {
	var u usage
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		r, ok := regionRank(target)
		if !ok || (rank >= 0 && r != rank) {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(fd, &st) != nil {
			continue
		}
		committed := float64(st.Blocks) * 512 // tmpfs: blocks are the pages it holds
		u.ShmCommitted += committed
		if st.Size >= int64(window) {
			u.MailboxCommitted += committed
		}
	}
	u.Mapped, u.Maps = mappedShm()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.Heap = float64(ms.HeapInuse)
	u.RSS, u.PSS = rollup("Rss:"), rollup("Pss:")
	if rank < 0 {
		share = max(share, 1)
		u.ShmCommitted /= float64(share)
		u.MailboxCommitted /= float64(share)
	}
	u.Mapped /= float64(share)
	u.Maps /= float64(share)
	u.Heap /= float64(share)
	u.RSS /= float64(share)
	u.PSS /= float64(share)
	return u
}

// regionRank is the owner rank of an shm region file named
// rdmactor-<job>-r<rank>-<seq> (a memfd, "/memfd:<name> (deleted)", or a
// named file).
func regionRank(target string) (int, bool) {
	i := strings.Index(target, "rdmactor-")
	if i < 0 {
		return 0, false
	}
	name := strings.TrimSuffix(target[i:], " (deleted)")
	j := strings.LastIndex(name, "-r")
	if j < 0 {
		return 0, false
	}
	rs, _, ok := strings.Cut(name[j+2:], "-")
	if !ok {
		return 0, false
	}
	r, err := strconv.Atoi(rs)
	return r, err == nil
}

// mappedShm is the bytes and the number of this process's mappings of shm
// region files.
func mappedShm() (total, count float64) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "rdmactor-") {
			continue
		}
		lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			total += float64(b - a)
			count++
		}
	}
	return total, count
}

// rollup is the field key of /proc/self/smaps_rollup, in bytes.
func rollup(key string) float64 {
	f, err := os.Open("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == key {
			kb, _ := strconv.ParseFloat(fs[1], 64)
			return kb * 1024
		}
	}
	return 0
}
