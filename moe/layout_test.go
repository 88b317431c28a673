package moe_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLayoutModel checks GetDispatchLayout, SendPositions, Runs and the
// count-matrix offsets against a dumb model: a list, per rank, of the
// tokens that go there.
func TestLayoutModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for trial := range 200 {
		ranks := 1 + rng.IntN(5)
		experts := ranks * (1 + rng.IntN(4))
		topk := 1 + rng.IntN(min(experts, 5))
		tokens := rng.IntN(40)
		idx, _, err := moe.RandomRouting(uint64(trial), 0, tokens, topk, experts, moe.Skew{Drop: 0.3 * rng.Float64(), Zipf: float64(trial % 2)})
		require.NoError(t, err)
		l, err := moe.GetDispatchLayout(idx, tokens, topk, experts, ranks)
		require.NoError(t, err)
		per := experts / ranks
		lists := make([][]int, ranks)
		perExpert := make([]int, experts)
		for tok := range tokens {
			seen := map[int]bool{}
			for _, e := range idx[tok*topk : (tok+1)*topk] {
				if e >= 0 {
					perExpert[e]++
					if r := int(e) / per; !seen[r] {
						seen[r] = true
						lists[r] = append(lists[r], tok)
					}
				}
			}
		}
		assert.Equal(t, perExpert, l.NumTokensPerExpert, "trial %d", trial)
		pos := make([]int32, tokens*ranks)
		moe.SendPositions(pos, l.IsTokenInRank, tokens, ranks)
		for r, list := range lists {
			assert.Equal(t, len(list), l.NumTokensPerRank[r], "trial %d rank %d", trial, r)
			for j, tok := range list {
				assert.True(t, l.IsTokenInRank[tok*ranks+r])
				assert.Equal(t, int32(j), pos[tok*ranks+r], "trial %d rank %d token %d", trial, r, tok)
			}
			// Runs cover exactly the list, in order, with their positions.
			for _, perRow := range []bool{false, true} {
				var got []int
				for _, run := range moe.Runs(nil, l.IsTokenInRank, tokens, ranks, r, perRow) {
					if perRow {
						assert.Equal(t, 1, run.N)
					}
					for i := range run.N {
						assert.Equal(t, len(got), run.Pos+i)
						got = append(got, run.Token+i)
					}
				}
				assert.Equal(t, fmt.Sprint(list), fmt.Sprint(got), "trial %d rank %d", trial, r)
			}
		}
	}
}

func TestCountMatrixOffsets(t *testing.T) {
	m := moe.CountMatrix{Ranks: 3, C: []int{
		1, 2, 3, // rank 0 sends 1, 2, 3 rows to ranks 0, 1, 2
		4, 0, 6,
		7, 8, 9,
	}}
	assert.Equal(t, 0, m.RecvOffset(0, 1))
	assert.Equal(t, 2, m.RecvOffset(1, 1))
	assert.Equal(t, 2, m.RecvOffset(2, 1))
	assert.Equal(t, 10, m.RecvTotal(1))
	assert.Equal(t, 0, m.CombineOffset(2, 0))
	assert.Equal(t, 15, m.CombineOffset(2, 2))
	assert.Equal(t, 4, m.CombineOffset(1, 2))
}

func TestLLSlotsAndGroups(t *testing.T) {
	idx := []int32{3, 1, -1, 3, 1, 0}
	slot := make([]int32, len(idx))
	count := make([]int, 4)
	moe.LLSlots(slot, count, idx)
	assert.Equal(t, []int32{0, 0, -1, 1, 1, 0}, slot)
	assert.Equal(t, []int{1, 2, 0, 2}, count)

	var g moe.ExpertGroups
	moe.GroupByExpert(&g, []int32{1, -1, 0, 1}, []float32{.5, 0, .25, .75}, 2, 2)
	assert.Equal(t, []int{0, 1, 3}, g.Offsets)
	assert.Equal(t, []int32{1, 0, 1}, g.Rows)
	assert.Equal(t, []float32{.25, .5, .75}, g.Weights)
	assert.Equal(t, 2, g.Count(1))
}

func TestCheckRouting(t *testing.T) {
	assert.NoError(t, moe.CheckRouting([]int32{0, -1, 3}, 3, 1, 4))
	assert.ErrorIs(t, moe.CheckRouting([]int32{0, 4}, 2, 1, 4), moe.ErrBadArgument)
	assert.ErrorIs(t, moe.CheckRouting([]int32{0, -2}, 2, 1, 4), moe.ErrBadArgument)
	assert.ErrorIs(t, moe.CheckRouting([]int32{0, 1, 2}, 2, 1, 4), moe.ErrBadArgument)
	_, err := moe.GetDispatchLayout([]int32{0}, 1, 1, 3, 2)
	assert.ErrorIs(t, err, moe.ErrBadArgument)
}

// TestRandomRouting: deterministic, distinct experts per token, weights
// summing to 1, and a Zipf skew that favours the same experts on every
// rank.
func TestRandomRouting(t *testing.T) {
	const T, K, E = 2000, 8, 64
	for _, skew := range []moe.Skew{{}, {Zipf: 1.2}, {Drop: 0.25}} {
		a, wa, err := moe.RandomRouting(7, 1, T, K, E, skew)
		require.NoError(t, err)
		b, wb, _ := moe.RandomRouting(7, 1, T, K, E, skew)
		assert.Equal(t, a, b)
		assert.Equal(t, wa, wb)
		c, _, _ := moe.RandomRouting(7, 2, T, K, E, skew)
		assert.NotEqual(t, a, c, "ranks get different tokens")
		dropped := 0
		for tok := range T {
			seen := map[int32]bool{}
			sum := float32(0)
			for k := range K {
				e := a[tok*K+k]
				if e < 0 {
					dropped++
					assert.Zero(t, wa[tok*K+k])
					continue
				}
				assert.False(t, seen[e], "token %d: expert %d twice", tok, e)
				seen[e] = true
				assert.Positive(t, wa[tok*K+k])
				sum += wa[tok*K+k]
			}
			if len(seen) > 0 {
				assert.InDelta(t, 1, sum, 1e-5)
			}
		}
		if skew.Drop > 0 {
			assert.InDelta(t, skew.Drop, float64(dropped)/(T*K), 0.02)
		}
		if skew.Zipf > 0 {
			hits := func(idx []int32) []int {
				h := make([]int, E)
				for _, e := range idx {
					h[e]++
				}
				return h
			}
			ha, hc := hits(a), hits(c)
			top := 0
			for e := range E {
				if ha[e] > ha[top] {
					top = e
				}
			}
			assert.Greater(t, ha[top], 3*T*K/E, "the most popular expert is well above uniform")
			assert.Greater(t, hc[top], 3*T*K/E, "and it is the same on another rank")
		}
	}
	_, _, err := moe.RandomRouting(1, 0, 1, 9, 8, moe.Skew{})
	assert.ErrorIs(t, err, moe.ErrBadArgument)
}

// TestTraceFormats writes a trace as CSV and NPZ and reads both back;
// hand-written files in each format, a bare .npy of int32 ids in Fortran
// order, and malformed files are checked too.
func TestTraceFormats(t *testing.T) {
	dir := t.TempDir()
	idx, w, err := moe.RandomRouting(3, 0, 10, 4, 16, moe.Skew{Drop: 0.2})
	require.NoError(t, err)
	tr := &moe.Trace{Tokens: 10, TopK: 4, TopkIdx: idx, TopkWeights: w}
	for _, ext := range []string{".csv", ".npz"} {
		var buf bytes.Buffer
		if ext == ".csv" {
			require.NoError(t, tr.WriteCSV(&buf))
		} else {
			require.NoError(t, tr.WriteNPZ(&buf))
		}
		path := filepath.Join(dir, "trace"+ext)
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o600))
		got, err := moe.ReadTrace(path)
		require.NoError(t, err, ext)
		assert.Equal(t, tr, got, ext)
		require.NoError(t, got.Check(16))
	}
	a, b := tr.Rank(1, 3)
	assert.Equal(t, idx[3*4:6*4], a)
	assert.Equal(t, w[3*4:6*4], b)
	assert.Equal(t, 4, tr.MaxRankTokens(3))

	csv := "# a router trace\ntopk_idx_0,topk_idx_1,topk_weights_0,topk_weights_1\n3, 1, 0.75, 0.25\n\n-1,2,0,1\n"
	path := filepath.Join(dir, "hand.csv")
	require.NoError(t, os.WriteFile(path, []byte(csv), 0o600))
	got, err := moe.ReadTrace(path)
	require.NoError(t, err)
	assert.Equal(t, &moe.Trace{Tokens: 2, TopK: 2, TopkIdx: []int32{3, 1, -1, 2}, TopkWeights: []float32{.75, .25, 0, 1}}, got)

	// A bare .npy: int32, shape (2, 3), Fortran order: weights equal over
	// kept slots.
	hdr := "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }"
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	var npy bytes.Buffer
	npy.WriteString("\x93NUMPY\x01\x00")
	npy.Write([]byte{byte(len(hdr) + 1), 0})
	npy.WriteString(hdr + "\n")
	for _, v := range []int32{0, 3, 1, -1, 2, 5} { // columns: (0,3), (1,-1), (2,5)
		npy.Write([]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
	}
	path = filepath.Join(dir, "idx.npy")
	require.NoError(t, os.WriteFile(path, npy.Bytes(), 0o600))
	got, err = moe.ReadTrace(path)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1, 2, 3, -1, 5}, got.TopkIdx)
	assert.Equal(t, []float32{1. / 3, 1. / 3, 1. / 3, .5, 0, .5}, got.TopkWeights)

	for name, body := range map[string]string{
		"odd.csv":    "1,2,3\n",
		"ragged.csv": "1,2,0.5,0.5\n1,0.5\n",
		"empty.csv":  "# nothing\n",
		"bad.npy":    "not numpy",
		"bad.npz":    "not a zip",
		"x.txt":      "1,1\n",
	} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
		_, err := moe.ReadTrace(path)
		assert.ErrorIs(t, err, moe.ErrBadArgument, name)
	}
	bad := &moe.Trace{Tokens: 1, TopK: 1, TopkIdx: []int32{16}, TopkWeights: []float32{1}}
	assert.ErrorIs(t, bad.Check(16), moe.ErrBadArgument)
}
