package collective_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/stretchr/testify/require"
)

// configs are the algorithm settings every collective is tested under:
// the defaults (one-shot for small messages), rings and direct puts for
// everything, and the same with a scratch of 4 KiB and 256-byte pieces, so
// that messages go in many slices and pieces.
var configs = []struct {
	name string
	cfg  collective.Config
}{
	{"auto", collective.Config{}},
	{"large", collective.Config{OneShotMax: -1}},
	{"sliced", collective.Config{OneShotMax: -1, Scratch: 4096, Piece: 256}},
	{"ring", collective.Config{OneShotMax: -1, RingRanks: -1, Scratch: 8192, Piece: 512}},
	{"groups", collective.Config{HostRanks: 2}},
	// Hierarchical above OneShotMax, OneShot below it elsewhere.
	{"groups-large", collective.Config{HostRanks: 2, OneShotMax: 256}},
}

// rankCounts are the rank counts of the goroutine tests.
var rankCounts = []int{1, 2, 3, 4, 8}

// smallCounts are element counts: none, one, a small and a larger prime.
var smallCounts = []int{0, 1, 7, 1009}

// reduceCase is one reduction call of a test.
type reduceCase struct {
	dt      collective.DataType
	op      collective.Op
	count   int
	inPlace bool
}

func (c reduceCase) String() string {
	s := fmt.Sprintf("%v/%v/count=%d", c.dt, c.op, c.count)
	if c.inPlace {
		s += "/inplace"
	}
	return s
}

// reduceCases is every reducible type with sum, min and max over
// smallCounts, plus other types and prod, and in-place calls.
func reduceCases() []reduceCase {
	var cs []reduceCase
	for _, dt := range []collective.DataType{collective.Float32, collective.Float64, collective.Int32, collective.Int64} {
		for _, op := range []collective.Op{collective.Sum, collective.Min, collective.Max} {
			for _, n := range smallCounts {
				cs = append(cs, reduceCase{dt: dt, op: op, count: n})
			}
		}
	}
	return append(cs,
		reduceCase{dt: collective.Int8, op: collective.Sum, count: 1009},
		reduceCase{dt: collective.Uint8, op: collective.Max, count: 7},
		reduceCase{dt: collective.Uint32, op: collective.Sum, count: 1009},
		reduceCase{dt: collective.Uint64, op: collective.Min, count: 1009},
		reduceCase{dt: collective.Float64, op: collective.Prod, count: 1009},
		reduceCase{dt: collective.Int64, op: collective.Prod, count: 7},
		reduceCase{dt: collective.Float32, op: collective.Sum, count: 1009, inPlace: true},
		reduceCase{dt: collective.Int32, op: collective.Max, count: 7, inPlace: true},
	)
}

// digest hashes b, to check that every rank got the same bits.
func digest(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// checkSame fails t unless every rank's digest of every case is equal.
func checkSame(t *testing.T, digests [][]uint64) {
	t.Helper()
	for r := 1; r < len(digests); r++ {
		require.Equal(t, digests[0], digests[r], "rank %d's results differ from rank 0's", r)
	}
}

func TestAllReduce(t *testing.T) {
	cases := reduceCases()
	const maxBytes = 1009 * 8
	for _, n := range rankCounts {
		for _, cc := range configs {
			t.Run(fmt.Sprintf("n=%d/%s", n, cc.name), func(t *testing.T) {
				j := newJob(t, n, cc.cfg)
				wins := j.windows(2 * maxBytes)
				digests := make([][]uint64, n)
				j.ranks(func(r int) error {
					for k, cs := range cases {
						w, dstOff := wins[r], maxBytes
						if cs.inPlace {
							dstOff = 0
						}
						if err := fill(w, 0, cs.dt, cs.op, r, 0, cs.count, k); err != nil {
							return err
						}
						if err := j.colls[r].AllReduce(j.ctx, collective.At(w, dstOff), collective.At(w, 0), cs.count, cs.dt, cs.op); err != nil {
							return fmt.Errorf("%v: %w", cs, err)
						}
						if err := checkReduced(w, dstOff, cs, n, 0, k); err != nil {
							return err
						}
						digests[r] = append(digests[r], digest(w.Bytes()[dstOff:dstOff+cs.count*cs.dt.Size()]))
					}
					return nil
				})
				checkSame(t, digests)
			})
		}
	}
}

// Small all-reduces, all-gathers and broadcasts go by Hierarchical where
// Config.HostRanks splits the ranks into groups of two or more, and by
// OneShot (Direct) otherwise: on one host by default (the LSA team is
// every rank), with groups that do not divide the ranks, with one group,
// or with groups of one. The other collectives keep theirs.
func TestAllReduceAlgorithmGroups(t *testing.T) {
	for _, tc := range []struct {
		n, hostRanks, hierMax int
		want                  collective.Algorithm
	}{
		{4, 0, 0, collective.OneShot},
		{4, 2, 0, collective.Hierarchical},
		{8, 4, 0, collective.Hierarchical},
		{8, 2, 0, collective.Hierarchical},
		{6, 4, 0, collective.OneShot},
		{4, 4, 0, collective.OneShot},
		{4, 1, 0, collective.OneShot},
		{4, -1, 0, collective.OneShot},
		{4, 2, -1, collective.OneShot},
	} {
		t.Run(fmt.Sprintf("n=%d/hostranks=%d/hiermax=%d", tc.n, tc.hostRanks, tc.hierMax), func(t *testing.T) {
			j := newJob(t, tc.n, collective.Config{HostRanks: tc.hostRanks, HierarchicalMax: tc.hierMax})
			for r, c := range j.colls {
				require.Equal(t, tc.want, c.Algorithm(collective.AllReduceOp, 16, collective.Float32), "rank %d", r)
				require.Equal(t, tc.want, c.Algorithm(collective.AllGatherOp, 16, collective.Float32), "rank %d, all-gather", r)
				require.Equal(t, collective.OneShot, c.Algorithm(collective.AllToAllOp, 16, collective.Float32), "rank %d, all-to-all", r)
				bcast := collective.Direct
				if tc.want == collective.Hierarchical {
					bcast = collective.Hierarchical
				}
				require.Equal(t, bcast, c.Algorithm(collective.BroadcastOp, 16, collective.Float32), "rank %d, broadcast", r)
				require.Equal(t, collective.TwoShot, c.Algorithm(collective.AllReduceOp, 1<<20, collective.Float32), "rank %d, 4 MiB", r)
				// 512 KiB: over OneShotMax, within HierarchicalMax.
				large, largeGather := collective.TwoShot, collective.Direct
				if tc.want == collective.Hierarchical {
					large, largeGather = collective.Hierarchical, collective.Hierarchical
				}
				require.Equal(t, large, c.Algorithm(collective.AllReduceOp, 128<<10, collective.Float32), "rank %d, 512 KiB", r)
				require.Equal(t, largeGather, c.Algorithm(collective.AllGatherOp, 128<<10, collective.Float32), "rank %d, all-gather 512 KiB", r)
				require.Equal(t, tc.want, c.Algorithm(collective.ReduceScatterOp, 16, collective.Float32), "rank %d, reduce-scatter", r)
			}
		})
	}
}

// checkReduced checks count reduced elements at byte offset off of w
// against the reference for element indices first, first+1, ...
func checkReduced(w *gin.Window, off int, cs reduceCase, n, first, salt int) error {
	got, err := load(w, off, cs.dt, cs.count)
	if err != nil {
		return err
	}
	for i, g := range got {
		want, mag := reference(cs.dt, cs.op, n, first+i, salt)
		if !near(cs.dt, g, typed(cs.dt, want), mag) {
			return fmt.Errorf("%v: element %d is %v, want %v", cs, first+i, g, want)
		}
	}
	return nil
}

// TestAllReduceLarge: 16 MiB per rank (1 MiB under -race), by two-shot
// and by ring.
func TestAllReduceLarge(t *testing.T) {
	bytes := testutils.Scale(16<<20, 1<<20)
	algs := []struct {
		alg collective.Algorithm
		cfg collective.Config
	}{{collective.TwoShot, collective.Config{}}, {collective.Ring, collective.Config{RingRanks: -1}}}
	for _, n := range []int{2, 3, 4, 8} {
		for _, a := range algs {
			for _, dt := range []collective.DataType{collective.Float32, collective.Int64} {
				t.Run(fmt.Sprintf("n=%d/%v/%v", n, a.alg, dt), func(t *testing.T) {
					cs := reduceCase{dt: dt, op: collective.Sum, count: bytes / dt.Size()}
					j := newJob(t, n, a.cfg)
					wins := j.windows(2 * bytes)
					digests := make([][]uint64, n)
					j.ranks(func(r int) error {
						w := wins[r]
						if err := fill(w, 0, cs.dt, cs.op, r, 0, cs.count, 1); err != nil {
							return err
						}
						if alg := j.colls[r].Algorithm(collective.AllReduceOp, cs.count, dt); alg != a.alg {
							return fmt.Errorf("algorithm %v for %d bytes, want %v", alg, bytes, a.alg)
						}
						if err := j.colls[r].AllReduce(j.ctx, collective.At(w, bytes), collective.At(w, 0), cs.count, dt, cs.op); err != nil {
							return err
						}
						digests[r] = append(digests[r], digest(w.Bytes()[bytes:]))
						return checkReduced(w, bytes, cs, n, 0, 1)
					})
					checkSame(t, digests)
				})
			}
		}
	}
}
