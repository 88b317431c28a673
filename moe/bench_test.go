package moe_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/rdmactor/rdmactor/moe"
)

// BenchmarkDispatchCombine times one Dispatch+Combine round (no expert
// compute between, as DeepEP's benchmarks) on 2 goroutine ranks, per
// size, with the bytes that cross ranks per rank as b.SetBytes. The
// examples/moe command and scripts/bench_moe.sh time processes against
// the AllToAllV and Open MPI baselines; this is the quick look.
func BenchmarkDispatchCombine(b *testing.B) {
	for _, c := range []struct{ tokens, hidden int }{{128, 7168}, {512, 2048}, {4096, 1024}} {
		for _, ll := range []bool{false, true} {
			if ll && c.tokens > 128 {
				continue
			}
			mode := "normal"
			if ll {
				mode = "ll"
			}
			b.Run(fmt.Sprintf("%s/tokens=%d/hidden=%d", mode, c.tokens, c.hidden), func(b *testing.B) {
				benchRound(b, 2, c.tokens, c.hidden, ll)
			})
		}
	}
}

func benchRound(b *testing.B, n, T, H int, ll bool) {
	const K, E = 8, 64
	cfg := moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E}}
	if ll {
		cfg.MaxLLTokens = T
	} else {
		cfg.MaxTokens = T
	}
	j := newJob[uint16](b, n, cfg)
	data := make([]rankData, n)
	outs := make([][]uint16, n)
	xs := make([][]uint16, n)
	for r := range n {
		data[r] = exactData(1, r, T, H, K, E, moe.Skew{})
		outs[r] = make([]uint16, T*H)
		xs[r] = j.hs[r].Input()[:T*H]
		copy(xs[r], toElems[uint16](data[r].x))
	}
	cross := 0
	L := E / n
	for r := range n {
		for t := range T {
			seen := make([]bool, n)
			for _, e := range data[r].idx[t*K : (t+1)*K] {
				if e < 0 || int(e)/L == r {
					continue
				}
				if ll || !seen[int(e)/L] {
					cross++
					seen[int(e)/L] = true
				}
			}
		}
	}
	b.SetBytes(int64(cross / n * H * 2))
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for r := range n {
		wg.Go(func() {
			h, d := j.hs[r], data[r]
			for i := 0; i < b.N && errs[r] == nil; i++ {
				if ll {
					recv, err := h.DispatchLL(j.ctx, xs[r], d.idx)
					if err == nil {
						err = h.CombineLL(j.ctx, recv.X, d.w, outs[r])
					}
					errs[r] = err
					continue
				}
				recv, err := h.Dispatch(j.ctx, xs[r], d.idx, d.w)
				if err == nil {
					err = h.Combine(j.ctx, recv.X, outs[r])
				}
				errs[r] = err
			}
			if errs[r] != nil {
				j.stop()
			}
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			b.Fatalf("rank %d: %v", r, err)
		}
	}
}

// BenchmarkReduceCombined is the source-side sum of combine alone: 2
// rows per token, bf16, DeepEP's hidden size.
func BenchmarkReduceCombined(b *testing.B) {
	const T, H, n = 512, 7168, 2
	blocks := [][]uint16{make([]uint16, T*H), make([]uint16, T*H)}
	pos := make([]int32, T*n)
	for t := range T {
		pos[t*n], pos[t*n+1] = int32(t), int32(t)
	}
	out := make([]uint16, T*H)
	acc := make([]float32, H)
	b.SetBytes(3 * T * H * 2) // two rows read, one written
	for b.Loop() {
		moe.ReduceCombined(out, blocks, pos, acc, T, n, H)
	}
}
