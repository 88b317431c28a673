package gpumoe

import (
	"encoding/binary"
	"errors"
	"sort"
	"testing"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regions of the window and of the state: aligned, inside, disjoint.
func TestPlanRegions(t *testing.T) {
	for _, cfg := range []Config{
		{Sizes: moe.Sizes{Hidden: 7168, TopK: 8, NumExperts: 256, MaxTokens: 4096, MaxLLTokens: 128}},
		{Sizes: moe.Sizes{Hidden: 7168, TopK: 8, NumExperts: 256, MaxLLTokens: 128}, FP8: true},
		{Sizes: moe.Sizes{Hidden: 1001, TopK: 3, NumExperts: 6, MaxTokens: 10}},
		{Sizes: moe.Sizes{Hidden: 13, TopK: 32, NumExperts: 64, MaxTokens: 1, MaxLLTokens: 3}, FP8: true},
	} {
		for _, n := range []int{1, 2, 8} {
			if cfg.NumExperts%n != 0 {
				continue
			}
			p, err := newPlan(cfg, n, n-1)
			require.NoError(t, err)
			require.Equal(t, 0, p.rs%16)
			require.GreaterOrEqual(t, p.rs, 2*cfg.Hidden)
			require.Equal(t, 0, (p.ew*4)%16)
			require.GreaterOrEqual(t, p.ew, 1+2*cfg.TopK)
			require.Equal(t, 0, p.hdrB%16)
			require.GreaterOrEqual(t, p.hdrB, 8*n+4*p.l)
			if cfg.FP8 {
				require.GreaterOrEqual(t, p.slotB, align(cfg.Hidden, 16)+4*p.groups)
			} else {
				require.Equal(t, p.rs, p.slotB)
			}
			type reg struct{ off, size int }
			check := func(regs []reg, size int) {
				t.Helper()
				sort.Slice(regs, func(i, j int) bool { return regs[i].off < regs[j].off })
				end := 0
				for _, r := range regs {
					if r.size == 0 {
						continue
					}
					require.Equal(t, 0, r.off%regionAlign)
					require.GreaterOrEqual(t, r.off, end, "regions overlap")
					end = r.off + r.size
				}
				require.LessOrEqual(t, end, size)
			}
			nt, ll := p.maxT, p.maxLL
			win := []reg{{p.input, max(nt, ll) * p.rs}}
			if nt > 0 {
				win = append(win, reg{p.cnt, 2 * n * p.hdrB}, reg{p.metaStage, n * nt * p.ew * 4},
					reg{p.recvMeta, n * nt * p.ew * 4}, reg{p.recvX, n * nt * p.rs})
			}
			if ll > 0 {
				win = append(win, reg{p.llX, p.l * n * ll * p.slotB}, reg{p.llSrc, p.l * n * ll * 4}, reg{p.llCount, p.l * n * 4},
					reg{p.llRoute, n * 8 * (1 + ll*p.k + p.e)}, reg{p.llW, n * ll * p.k * 8}, reg{p.llPart, n * ll * p.prs},
					reg{p.llFlag, n * ll * p.flagS * 8})
				require.Equal(t, 0, p.prs%16)
				require.GreaterOrEqual(t, p.prs, 4*p.h)
				if cfg.FP8 {
					win = append(win, reg{p.llStage, ll * p.slotB}, reg{p.llY, p.l * n * ll * p.rs})
				} else {
					require.Equal(t, p.llX, p.llY)
				}
			}
			check(win, p.size)
			check([]reg{{p.masks, 4 * nt}, {p.pos, 4 * nt * n}, {p.tokPerExpert, 4 * p.e}, {p.tokPerRank, 4 * n},
				{p.finish, 8 * n}, {p.lay, p.laySize()},
				{p.llSlotOf, 4 * ll * p.k}, {p.errWord, 8},
				{p.recvTokPerExpert, 4 * p.l}, {p.llTokPerExpert, 4 * p.l}}, p.stateSize)
			if nt > 0 {
				require.Equal(t, 4*(2*p.e*32+4+(nt+31)/32*n), p.laySize())
			} else {
				require.Zero(t, p.laySize())
			}
			// Signals: distinct, Signals() of them from sig0.
			seen := map[int]bool{}
			for s := range n {
				for _, v := range []int{p.sigCnt(s), p.sigData(s), p.sigComb(s), p.sigLLComb(s)} {
					require.False(t, seen[v])
					seen[v] = true
				}
			}
			require.Len(t, seen, Signals(n, cfg))
		}
	}
}

// Args holds the plan in kernels.cu's field order.
func TestPlanArgs(t *testing.T) {
	p, err := newPlan(Config{Sizes: moe.Sizes{Hidden: 100, TopK: 4, NumExperts: 8, MaxTokens: 16, MaxLLTokens: 4}, FP8: true, Signal0: 3}, 2, 1)
	require.NoError(t, err)
	a := p.args(0x1000, 0x200000)
	w := func(i int) uint64 { return binary.LittleEndian.Uint64(a[8*i:]) }
	assert.Equal(t, uint64(0x1000), w(0)) // win
	assert.Equal(t, []uint64{1, 2, 100, 4, 8, 4, 16, 4}, []uint64{w(1), w(2), w(3), w(4), w(5), w(6), w(7), w(8)})
	assert.Equal(t, uint64(p.rs), w(9))
	assert.Equal(t, uint64(p.routeB), w(16))
	assert.Equal(t, uint64(p.flagS), w(17))
	assert.Equal(t, uint64(3), w(12))       // sigBase
	assert.Equal(t, uint64(1), w(13))       // fp8
	assert.Equal(t, uint64(p.recvX), w(22)) // last normal region
	assert.Equal(t, uint64(p.llRoute), w(28))
	assert.Equal(t, uint64(p.llPart), w(30))
	assert.Equal(t, uint64(p.llFlag), w(31))                          // last low-latency region
	assert.Equal(t, uint64(0x200000+p.masks), w(32))                  // first state pointer
	assert.Equal(t, uint64(0x200000+p.llTokPerExpert), w(argWords-1)) // last
}

// Every destination gets blocks, local copies about a fifth of what a
// remote destination gets, and each destination's blocks are 0..g-1.
func TestBlockDest(t *testing.T) {
	for _, c := range []struct{ G, n int }{{132, 2}, {132, 8}, {132, 32}, {2, 2}, {3, 2}, {32, 32}, {7, 1}, {66, 3}} {
		for me := range c.n {
			seen := map[int][]int{}
			for b := range c.G {
				r, j, g := blockDest(b, c.G, c.n, me)
				require.Less(t, j, g)
				seen[r] = append(seen[r], j)
			}
			require.Len(t, seen, c.n, "G %d n %d: every destination served", c.G, c.n)
			for r, js := range seen {
				for i, j := range js {
					require.Equal(t, i, j, "G %d n %d rank %d", c.G, c.n, r)
				}
			}
		}
	}
	_, _, g := blockDest(131, 132, 2, 0)
	assert.Equal(t, 26, g) // the local copy: 26 blocks, 106 to the peer
}

func TestConfigCheck(t *testing.T) {
	good := Config{Sizes: moe.Sizes{Hidden: 16, TopK: 2, NumExperts: 4, MaxTokens: 8}}
	require.NoError(t, good.check(2))
	for name, c := range map[string]struct {
		cfg Config
		n   int
	}{
		"experts not a multiple": {Config{Sizes: moe.Sizes{Hidden: 16, TopK: 2, NumExperts: 5, MaxTokens: 8}}, 2},
		"no mode":                {Config{Sizes: moe.Sizes{Hidden: 16, TopK: 2, NumExperts: 4}}, 2},
		"top-k 33":               {Config{Sizes: moe.Sizes{Hidden: 16, TopK: 33, NumExperts: 64, MaxTokens: 8}}, 2},
		"33 ranks":               {Config{Sizes: moe.Sizes{Hidden: 16, TopK: 2, NumExperts: 66, MaxTokens: 8}}, 33},
		"negative":               {Config{Sizes: moe.Sizes{Hidden: 16, TopK: 2, NumExperts: 4, MaxTokens: -1, MaxLLTokens: 4}}, 2},
		"zero hidden":            {Config{Sizes: moe.Sizes{TopK: 2, NumExperts: 4, MaxTokens: 8}}, 2},
	} {
		err := c.cfg.check(c.n)
		require.Error(t, err, name)
		require.True(t, errors.Is(err, moe.ErrBadArgument), name)
	}
}
