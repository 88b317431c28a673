package main

import (
	"fmt"
	"path/filepath"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/idle"
	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/internal/tmpfs"
)

// floor is the physical floor of a put with a signal: one file in /dev/shm
// that both ranks map, written with a plain Go copy into the peer's part
// followed by an atomic add on the peer's flag word, and waited on with
// atomic loads of one's own flag. No gin, endpoint or provider code runs:
// this is what shm's put costs at least ("plain Go copy plus an atomic add
// on the same shared mapping").
//
// Layout (area = 3*span bytes, span = the largest size, page-rounded):
//
//	0            128          pageSize               pageSize+area
//	+------------+------------+-----+----------------------+----------------------+
//	| flag of r0 | flag of r1 | pad | r0: send | recv x 2  | r1: send | recv x 2  |
//	+------------+------------+-----+----------------------+----------------------+
//
// Each flag sits on its own cache line pair (no false sharing between the
// two flags); recv has two halves so bandwidth puts can alternate.
type floor struct {
	path string
	mem  []byte
	flag [2]*atomic.Uint64
	send [2][]byte
	recv [2][]byte // 2*span each
}

const pageSize = 4096

func roundPage(n int) int { return (n + pageSize - 1) / pageSize * pageSize }

func floorPath(id uint64) string {
	return filepath.Join(tmpfs.Dir(), fmt.Sprintf("rdmabench-%016x-floor", id))
}

// mapFloor maps the floor file for blocks of up to span bytes; create is
// true on the rank that makes the file.
func mapFloor(path string, span int, create bool) (*floor, error) {
	span = roundPage(span)
	area := 3 * span
	mem, err := mapShared(path, pageSize+2*area, create)
	if err != nil {
		return nil, fmt.Errorf("floor mapping: %w", err)
	}
	f := &floor{path: path, mem: mem}
	for r := range 2 {
		f.flag[r] = memword.Uint64(mem, 128*r)
		base := pageSize + r*area
		f.send[r] = mem[base : base+span : base+span]
		f.recv[r] = mem[base+span : base+area : base+area]
	}
	return f, nil
}

func (f *floor) close() error {
	if f == nil || f.mem == nil {
		return nil
	}
	err := unmap(f.mem)
	f.mem = nil
	return err
}

// waitFlag waits until w reaches least with the same loop as gin's waits
// (an atomic load, a compare, then the Comm's idle strategy, which looks at
// ctx only once it parks), so floor and gin figures wait alike: with
// -spins, both spin through a ping-pong, and in a long stream both park
// after about a millisecond.
func (r *rank) waitFlag(w *atomic.Uint64, least uint64) error {
	if w.Load() >= least {
		return nil
	}
	b := idle.New(r.idle)
	for w.Load() < least {
		if b.Idle() {
			if err := r.ctx.Err(); err != nil {
				return fmt.Errorf("floor: wait for flag %d (at %d): %w", least, w.Load(), err)
			}
		}
	}
	return nil
}

// floorPingPong is the floor of putsig_lat: rank 0 copies size bytes into
// rank 1's receive area and adds 1 to its flag, rank 1 waits for the flag
// and answers the same way; rank 0 waits for its own flag.
func (r *rank) floorPingPong(size int) kernel {
	f := r.floor
	src, dst := f.send[r.me][:size], f.recv[r.peer][:size]
	mine, theirs := f.flag[r.me], f.flag[r.peer]
	return r.pingPong(func() error {
		copy(dst, src)
		theirs.Add(1)
		return nil
	}, func() error {
		r.floorSeen++
		return r.waitFlag(mine, r.floorSeen)
	})
}

// floorStream is the floor of put_bw: rank 0 copies n blocks of size bytes
// into alternate halves of rank 1's receive area, adding 1 to rank 1's flag
// after each; rank 1 waits for the last.
func (r *rank) floorStream(size int) kernel {
	f := r.floor
	span := len(f.recv[0]) / 2
	src := f.send[0][:size]
	dst := [2][]byte{f.recv[1][:size], f.recv[1][span : span+size]}
	theirs, mine := f.flag[1], f.flag[r.me]
	return func(n int, _ []int64) error {
		if r.me == 0 {
			for i := range n {
				copy(dst[i&1], src)
				theirs.Add(1)
			}
			return nil
		}
		r.floorSeen += uint64(n)
		return r.waitFlag(mine, r.floorSeen)
	}
}
