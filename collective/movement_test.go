package collective_test

import (
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// moveTypes are the element types the data-movement tests use: one of
// each size.
var moveTypes = []collective.DataType{collective.Uint8, collective.Bfloat16, collective.Float32, collective.Int64}

// moveCase is one call of a data-movement collective: count elements per
// rank (per pair for AllToAll).
type moveCase struct {
	dt    collective.DataType
	count int
}

func moveCases() []moveCase {
	var cs []moveCase
	for _, dt := range moveTypes {
		for _, n := range smallCounts {
			cs = append(cs, moveCase{dt, n})
		}
	}
	return cs
}

// val is element i of rank r's data in test case salt (exact in every
// moved type: values below 256 fit uint8 and bfloat16 bits alike).
func val(dt collective.DataType, r, i, salt int) float64 {
	return value(dt, collective.Max, r, i, salt)
}

// expect checks count elements at byte offset off of w against want(i).
func expect(w *gin.Window, off int, dt collective.DataType, count int, what string, want func(i int) float64) error {
	got, err := load(w, off, dt, count)
	if err != nil {
		return err
	}
	for i, g := range got {
		if w := float64Of(dt, want(i)); g != w {
			return fmt.Errorf("%s: element %d is %v, want %v", what, i, g, w)
		}
	}
	return nil
}

// float64Of is v as stored in dt and read back.
func float64Of(dt collective.DataType, v float64) float64 {
	switch dt {
	case collective.Float32:
		return float64(float32(v))
	case collective.Uint8:
		return float64(uint8(int64(v)))
	case collective.Bfloat16:
		return float64(uint16(int64(v)))
	}
	return v
}

// moveTest runs cases of one collective on every rank count and config.
// bytesPerElem is the window size needed per element of count.
func moveTest(t *testing.T, cases []moveCase, perCount int, run func(j *job, w *gin.Window, r, k int, cs moveCase) error) {
	maxCount := 0
	for _, cs := range cases {
		maxCount = max(maxCount, cs.count*cs.dt.Size())
	}
	for _, n := range rankCounts {
		for _, cc := range configs {
			t.Run(fmt.Sprintf("n=%d/%s", n, cc.name), func(t *testing.T) {
				j := newJob(t, n, cc.cfg)
				wins := j.windows(perCount*n*maxCount + 64)
				j.ranks(func(r int) error {
					for k, cs := range cases {
						if err := run(j, wins[r], r, k, cs); err != nil {
							return fmt.Errorf("%v count %d: %w", cs.dt, cs.count, err)
						}
					}
					return nil
				})
			})
		}
	}
}

func TestAllGather(t *testing.T) {
	cases := moveCases()
	moveTest(t, cases, 2, func(j *job, w *gin.Window, r, k int, cs moveCase) error {
		n, b := len(j.comms), cs.count*cs.dt.Size()
		dst := collective.At(w, n*b)
		src := collective.At(w, 0)
		if k%3 == 2 { // in place: the source is this rank's block of dst
			src = collective.At(w, n*b+r*b)
		}
		if err := fill(w, src.Offset, cs.dt, collective.Max, r, 0, cs.count, k); err != nil {
			return err
		}
		if err := j.colls[r].AllGather(j.ctx, dst, src, cs.count, cs.dt); err != nil {
			return err
		}
		for q := range n {
			if err := expect(w, dst.Offset+q*b, cs.dt, cs.count, fmt.Sprintf("block %d", q), func(i int) float64 { return val(cs.dt, q, i, k) }); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestReduceScatter(t *testing.T) {
	cases := reduceCases()
	for i := range cases {
		cases[i].inPlace = i%4 == 3
	}
	maxBytes := 1009 * 8
	for _, n := range rankCounts {
		for _, cc := range configs {
			t.Run(fmt.Sprintf("n=%d/%s", n, cc.name), func(t *testing.T) {
				j := newJob(t, n, cc.cfg)
				wins := j.windows((n + 1) * maxBytes)
				digests := make([][]uint64, n)
				j.ranks(func(r int) error {
					for k, cs := range cases {
						w, b := wins[r], cs.count*cs.dt.Size()
						if err := fill(w, 0, cs.dt, cs.op, r, 0, n*cs.count, k); err != nil {
							return err
						}
						dstOff := n * maxBytes
						if cs.inPlace {
							dstOff = r * b
						}
						if err := j.colls[r].ReduceScatter(j.ctx, collective.At(w, dstOff), collective.At(w, 0), cs.count, cs.dt, cs.op); err != nil {
							return fmt.Errorf("%v: %w", cs, err)
						}
						if err := checkReduced(w, dstOff, cs, n, r*cs.count, k); err != nil {
							return err
						}
						digests[r] = append(digests[r], digest(w.Bytes()[dstOff:dstOff+b]))
					}
					return nil
				})
			})
		}
	}
}

func TestBroadcast(t *testing.T) {
	cases := moveCases()
	moveTest(t, cases, 2, func(j *job, w *gin.Window, r, k int, cs moveCase) error {
		n, b := len(j.comms), cs.count*cs.dt.Size()
		root := k % n
		src, dst := collective.At(w, 0), collective.At(w, n*b)
		if k%3 == 2 {
			dst = src // in place at the root
		}
		if r == root {
			if err := fill(w, 0, cs.dt, collective.Max, r, 0, cs.count, k); err != nil {
				return err
			}
		}
		if err := j.colls[r].Broadcast(j.ctx, dst, src, cs.count, cs.dt, root); err != nil {
			return err
		}
		return expect(w, dst.Offset, cs.dt, cs.count, fmt.Sprintf("from root %d", root), func(i int) float64 { return val(cs.dt, root, i, k) })
	})
}

func TestAllToAll(t *testing.T) {
	cases := moveCases()
	moveTest(t, cases, 2, func(j *job, w *gin.Window, r, k int, cs moveCase) error {
		n, b := len(j.comms), cs.count*cs.dt.Size()
		src, dst := collective.At(w, 0), collective.At(w, n*b)
		if err := fill(w, 0, cs.dt, collective.Max, r, 0, n*cs.count, k); err != nil {
			return err
		}
		if err := j.colls[r].AllToAll(j.ctx, dst, src, cs.count, cs.dt); err != nil {
			return err
		}
		for q := range n {
			if err := expect(w, dst.Offset+q*b, cs.dt, cs.count, fmt.Sprintf("block from %d", q), func(i int) float64 { return val(cs.dt, q, r*cs.count+i, k) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// sendCount is what rank from sends rank to in AllToAllV case salt:
// 0 to 2*base-1 elements, zero for some pairs.
func sendCount(from, to, salt, base int) int {
	if base == 0 {
		return 0
	}
	return (from*7 + to*13 + salt*5) % (2 * base)
}

func TestAllToAllV(t *testing.T) {
	cases := moveCases()
	moveTest(t, cases, 4, func(j *job, w *gin.Window, r, k int, cs moveCase) error {
		n, es := len(j.comms), cs.dt.Size()
		capacity := 2 * n * cs.count
		send, recv := make([]int, n), make([]int, n)
		off := 0
		for p := range n {
			send[p] = sendCount(r, p, k, cs.count)
			if err := fill(w, off*es, cs.dt, collective.Max, r, p<<20, send[p], k); err != nil {
				return err
			}
			off += send[p]
		}
		dst := collective.At(w, capacity*es)
		if err := j.colls[r].AllToAllV(j.ctx, dst, capacity, collective.At(w, 0), send, recv, cs.dt); err != nil {
			return err
		}
		at := dst.Offset
		for q := range n {
			if want := sendCount(q, r, k, cs.count); recv[q] != want {
				return fmt.Errorf("received count %d from rank %d, want %d", recv[q], q, want)
			}
			if err := expect(w, at, cs.dt, recv[q], fmt.Sprintf("block from %d", q), func(i int) float64 { return val(cs.dt, q, r<<20+i, k) }); err != nil {
				return err
			}
			at += recv[q] * es
		}
		return nil
	})
}
