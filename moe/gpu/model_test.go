package gpumoe

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/rdmactor/rdmactor/moe"
	"github.com/stretchr/testify/require"
)

// A model of kernels.cu's index math, statement for statement where it
// matters: the layout's chunked block scan, the dispatch's blocks,
// sub-chunks, runs and prefix-sum offsets, the combines' reductions over
// rows pulled from where the experts wrote them, and the low-latency parts.
// It checks them against package moe's CPU functions and against Reference,
// for edge-case routings.

type modelInput struct {
	x   []uint16 // [T][H]
	idx []int32  // [T][K]
	w   []float32
	T   int
}

type modelCase struct {
	name          string
	n, H, K, E, T int
	route         func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32)
}

func uniformRoute(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
	idx, w, err := moe.RandomRouting(rng.Uint64(), rank, T, K, E, moe.Skew{})
	if err != nil {
		panic(err)
	}
	return idx, w
}

var modelCases = []modelCase{
	{"uniform", 2, 64, 8, 16, 100, uniformRoute},
	{"four-ranks", 4, 40, 4, 16, 77, uniformRoute},
	{"odd-hidden", 2, 13, 3, 8, 33, uniformRoute},
	{"dropped", 3, 24, 4, 12, 50, func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
		idx, w, _ := moe.RandomRouting(rng.Uint64(), rank, T, K, E, moe.Skew{Drop: 0.4})
		return idx, w
	}},
	{"one-expert", 2, 16, 2, 8, 40, func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
		idx, w := make([]int32, T*K), make([]float32, T*K)
		for i := range idx {
			idx[i], w[i] = -1, 0
			if i%K == 0 {
				idx[i], w[i] = 5, 1 // every token to expert 5 (rank 1)
			}
		}
		return idx, w
	}},
	{"repeated-expert", 2, 16, 4, 8, 40, func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
		idx, w := uniformRoute(rng, rank, T, K, E, n)
		for t := 0; t < T; t += 3 {
			idx[t*K+1], idx[t*K+3] = idx[t*K], idx[t*K] // one expert thrice
		}
		return idx, w
	}},
	{"rank1-empty", 2, 16, 4, 8, 40, func(rng *rand.Rand, rank, T, K, E, n int) ([]int32, []float32) {
		idx, w := make([]int32, T*K), make([]float32, T*K)
		for i := range idx {
			idx[i], w[i] = int32(i%K), 0.25 // experts 0..3: all on rank 0
		}
		return idx, w
	}},
	{"no-tokens", 2, 16, 4, 8, 0, uniformRoute},
}

func (c modelCase) inputs(seed uint64) []modelInput {
	rng := rand.New(rand.NewPCG(seed, 7))
	in := make([]modelInput, c.n)
	for r := range c.n {
		T := c.T
		if c.name == "four-ranks" {
			T = c.T - 10*r // ranks with different token counts
		}
		idx, w := c.route(rng, r, T, c.K, c.E, c.n)
		x := make([]uint16, T*c.H)
		for i := range x {
			x[i] = moe.BF16(float32(rng.IntN(17)-8) / 4)
		}
		in[r] = modelInput{x: x, idx: idx, w: w, T: T}
	}
	return in
}

// layoutModel is moe_layout on one rank: masks, then per rank a block scan
// over chunks of ceil(T/1024) tokens per thread.
func layoutModel(idx []int32, T, K, L, n int) (masks []uint32, pos []int32, perRank []int) {
	const bs = threads
	masks = make([]uint32, T)
	for t := range T {
		for k := range K {
			if e := idx[t*K+k]; e >= 0 {
				masks[t] |= 1 << (int(e) / L)
			}
		}
	}
	pos = make([]int32, T*n)
	perRank = make([]int, n)
	per := (T + bs - 1) / bs
	for r := range n {
		counts := make([]int, bs)
		for tid := range bs {
			t0 := min(T, tid*per)
			for t := t0; t < min(T, t0+per); t++ {
				counts[tid] += int(masks[t]>>r) & 1
			}
		}
		excl := 0
		for tid := range bs {
			p := excl
			t0 := min(T, tid*per)
			for t := t0; t < min(T, t0+per); t++ {
				if masks[t]>>r&1 != 0 {
					pos[t*n+r] = int32(p)
					p++
				} else {
					pos[t*n+r] = -1
				}
			}
			excl += counts[tid]
		}
		perRank[r] = excl
	}
	return masks, pos, perRank
}

func recvOffset(C []int, n, s, r int) int {
	o := 0
	for q := range s {
		o += C[q*n+r]
	}
	return o
}

type modelRecv struct {
	rows    [][]uint16 // by receive row; nil: never written
	entries [][]uint32
}

func TestModelNormal(t *testing.T) {
	for _, c := range modelCases {
		t.Run(c.name, func(t *testing.T) {
			n, H, K, E := c.n, c.H, c.K, c.E
			L := E / n
			in := c.inputs(1)
			maxT := max(c.T, 1)
			ew := align(1+2*K, 4)
			masks := make([][]uint32, n)
			pos := make([][]int32, n)
			C := make([]int, n*n)
			for s := range n {
				var perRank []int
				masks[s], pos[s], perRank = layoutModel(in[s].idx, in[s].T, K, L, n)
				// Against package moe.
				lay, err := moe.GetDispatchLayout(in[s].idx, in[s].T, K, E, n)
				require.NoError(t, err)
				require.Equal(t, lay.NumTokensPerRank, perRank)
				want := make([]int32, in[s].T*n)
				moe.SendPositions(want, lay.IsTokenInRank, in[s].T, n)
				require.Equal(t, want, pos[s])
				copy(C[s*n:], perRank)
			}
			// Dispatch: every block of every rank, as moe_dispatch runs
			// them (any order: they write disjoint rows).
			recv := make([]modelRecv, n)
			for _, G := range []int{n, 5, 132} { // grids: the least, small, an H200's
				for r := range n {
					recv[r] = modelRecv{rows: make([][]uint16, n*maxT), entries: make([][]uint32, n*maxT)}
				}
				for me := range n {
					T := in[me].T
					for b := range G {
						r, j, g := blockDest(b, G, n, me)
						tb0, tb1 := T*j/g, T*(j+1)/g
						// The fused dispatch's own count of the rows before
						// tb0: gridLayout's chunk counts, then tb0's chunk.
						run := 0
						for c := range tb0 / 32 {
							for t := 32 * c; t < min(T, 32*c+32); t++ {
								run += int(masks[me][t]>>r) & 1
							}
						}
						for t := tb0 / 32 * 32; t < tb0; t++ {
							run += int(masks[me][t]>>r) & 1
						}
						for c0 := tb0; c0 < tb1; c0 += 32 {
							var bitsOf uint32
							for l := range 32 {
								if t := c0 + l; t < tb1 && masks[me][t]>>r&1 != 0 {
									bitsOf |= 1 << l
								}
							}
							if bitsOf == 0 {
								continue
							}
							p0 := int(pos[me][(c0+bits.TrailingZeros32(bitsOf))*n+r])
							require.Equal(t, run, p0, "fused send position, grid %d rank %d block %d", G, me, b)
							run += bits.OnesCount32(bitsOf)
							row0 := recvOffset(C, n, me, r) + p0
							rest := uint64(bitsOf)
							for rest != 0 {
								s0 := bits.TrailingZeros64(rest)
								ln := bits.TrailingZeros64(^(rest >> s0))
								j := bits.OnesCount32(bitsOf & (1<<s0 - 1))
								for q := range ln {
									require.Nil(t, recv[r].rows[row0+j+q], "row written twice")
									recv[r].rows[row0+j+q] = in[me].x[(c0+s0+q)*H : (c0+s0+q+1)*H]
								}
								rest &^= (1<<ln - 1) << s0
							}
							for l := range 32 {
								if bitsOf>>l&1 == 0 {
									continue
								}
								tk := c0 + l
								j := bits.OnesCount32(bitsOf & (1<<l - 1))
								e := make([]uint32, ew)
								e[0] = uint32(tk)
								for k := range K {
									id, wt := in[me].idx[tk*K+k], float32(0)
									if id >= 0 && int(id)/L == r {
										id, wt = id%int32(L), in[me].w[tk*K+k]
									} else {
										id = -1
									}
									e[1+k] = uint32(id)
									e[1+K+k] = mathFloat32bits(wt)
								}
								recv[r].entries[row0+j] = e
							}
						}
					}
				}
				for r := range n {
					got := 0
					for _, row := range recv[r].rows {
						if row != nil {
							got++
						}
					}
					require.Equal(t, recvOffset(C, n, n, r), got, "grid %d: rows at rank %d", G, r)
				}
			}
			// The combine's split: every rank's blocks return each remote
			// row exactly once.
			for me := range n {
				for _, G := range []int{1, 7, 132} {
					seen := map[[2]int]int{}
					total := 0
					for q := 0; q+1 < n; q++ {
						total += C[((me+1+q)%n)*n+me]
					}
					for b := range G {
						a0, a1 := total*b/G, total*(b+1)/G
						at := 0
						for q := 0; q+1 < n; q++ {
							s := (me + 1 + q) % n
							rows := C[s*n+me]
							for i := max(a0, at); i < min(a1, at+rows); i++ {
								seen[[2]int{s, i - at}]++
							}
							at += rows
						}
					}
					require.Len(t, seen, total)
					for k, v := range seen {
						require.Equal(t, 1, v, "row %v", k)
					}
				}
			}
			// What each rank received, against package moe's layout.
			for r := range n {
				row := 0
				for s := range n {
					lay, _ := moe.GetDispatchLayout(in[s].idx, in[s].T, K, E, n)
					require.Equal(t, row, recvOffset(C, n, s, r))
					for tk := range in[s].T {
						if !lay.IsTokenInRank[tk*n+r] {
							continue
						}
						require.Equal(t, in[s].x[tk*H:(tk+1)*H], recv[r].rows[row], "rank %d row %d", r, row)
						require.Equal(t, uint32(tk), recv[r].entries[row][0])
						row++
					}
				}
				require.Equal(t, row, recvOffset(C, n, n, r))
				for i := row; i < len(recv[r].rows); i++ {
					require.Nil(t, recv[r].rows[i], "rank %d row %d beyond its rows", r, i)
				}
			}
			// Experts (scaled, in place, as moe_expert_normal), then combine.
			y := make([][][]float32, n)
			for r := range n {
				total := recvOffset(C, n, n, r)
				y[r] = make([][]float32, total)
				for i := range total {
					coef := float32(0)
					e := recv[r].entries[i]
					for k := range K {
						if le := int32(e[1+k]); le >= 0 {
							coef += mathFloat32frombits(e[1+K+k]) * Scaled.Scale(r*L+int(le))
						}
					}
					y[r][i] = make([]float32, H)
					for ch, v := range recv[r].rows[i] {
						y[r][i][ch] = moe.Float32(moe.BF16(coef * moe.Float32(v)))
					}
				}
			}
			for me := range n {
				out := make([]uint16, in[me].T*H)
				for tk := range in[me].T {
					for ch := range H {
						acc := float32(0)
						for r := range n {
							p := int(pos[me][tk*n+r])
							if p < 0 || C[me*n+r] == 0 {
								continue
							}
							// The source pulls its row from r's outputs.
							acc += y[r][recvOffset(C, n, me, r)+p][ch]
						}
						out[tk*H+ch] = moe.BF16(acc)
					}
				}
				want := Reference(in[me].x, in[me].idx, in[me].w, H, K, Scaled, false)
				require.Less(t, RelError(out, want, H), 2e-2, "rank %d", me)
			}
		})
	}
}

func TestModelLowLatency(t *testing.T) {
	for _, c := range modelCases {
		if c.T > 64 {
			c.T = 64
		}
		for _, fp8 := range []bool{false, true} {
			name := c.name + "/bf16"
			if fp8 {
				name = c.name + "/fp8"
			}
			t.Run(name, func(t *testing.T) {
				n, H, K, E := c.n, c.H, c.K, c.E
				in := c.inputs(2)
				maxLL := max(c.T, 1)
				p, err := newPlan(Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: E, MaxLLTokens: maxLL}, FP8: fp8}, n, 0)
				require.NoError(t, err)
				require.Zero(t, p.slotB%16, "a slot is whole 16-byte vectors")
				if fp8 {
					require.GreaterOrEqual(t, p.slotB, align(H, 16)+4*p.groups)
				} else {
					require.GreaterOrEqual(t, p.slotB, 2*H)
				}
				type slotKey struct{ e, s, j int } // global expert
				slots := map[slotKey][]float32{}   // dequantized rows
				src := map[slotKey]uint32{}
				for _, G := range []int{1, 5, 132} {
					W := max(G-1, 1) // the workers: all blocks but the routing one
					clear(slots)
					clear(src)
					// Each source's own slots (step 2), by blocks, and the
					// entry words it writes to every rank.
					slotOf := make([][]int, n)
					words := make([][]uint32, n)
					for s := range n {
						slotOf[s] = llSlotsModel(in[s].idx, in[s].T, K, E, W)
						require.Equal(t, llSlotsWant(in[s].idx, K), slotOf[s], "source %d: slots in token order", s)
						for i, e := range in[s].idx {
							words[s] = append(words[s], llEntryWord(int(e), slotOf[s][i]))
						}
					}
					// Receivers (step 5): each worker takes the same token range
					// of every source, C tokens of each at a time, and reads its
					// pairs' experts and slots from the entry words; tokens past
					// a source's T have no words this round and are skipped.
					C := max(1, 32/n)
					for me := range n {
						L := E / n
						for b := range W {
							t0, t1 := maxLL*b/W, maxLL*(b+1)/W
							for c0 := t0; c0 < t1; c0 += C {
								for s := range n {
									for i := c0 * K; i < min(c0+C, t1, in[s].T)*K; i++ {
										e, slot := llEntryExpert(words[s][i]), llEntrySlot(words[s][i])
										if e < me*L || e >= (me+1)*L {
											continue
										}
										tk, k := i/K, i%K
										require.Equal(t, slotOf[s][tk*K+k], slot, "rank %d: the source's slot of (%d, %d)", me, tk, k)
										row := in[s].x[tk*H : (tk+1)*H]
										var xf []float32
										if fp8 {
											xf = DequantizeFP8(QuantizeFP8(row))
										} else {
											for _, v := range row {
												xf = append(xf, moe.Float32(v))
											}
										}
										key := slotKey{e, s, slot}
										require.NotContains(t, src, key, "slot written twice")
										slots[key], src[key] = xf, uint32(tk*K+k)
									}
								}
							}
						}
					}
					// Every routed pair has its slot.
					for s := range n {
						for i, e := range in[s].idx {
							if e >= 0 {
								require.Contains(t, src, slotKey{int(e), s, slotOf[s][i]})
							}
						}
					}
				}
				slotOf := make([][]int, n)
				for s := range n {
					slotOf[s] = llSlotsWant(in[s].idx, K)
				}
				// Experts at rank e/L, scaled; the combine's reduction at each
				// source pulls rows by (expert, slot).
				for s := range n {
					out := make([]uint16, in[s].T*H)
					for tk := range in[s].T {
						for ch := range H {
							var a float32
							for k := range K {
								e := int(in[s].idx[tk*K+k])
								if e < 0 {
									continue
								}
								key := slotKey{e, s, slotOf[s][tk*K+k]}
								require.Equal(t, uint32(tk*K+k), src[key])
								yv := moe.Float32(moe.BF16(Scaled.Scale(e) * slots[key][ch]))
								a += in[s].w[tk*K+k] * yv
							}
							out[tk*H+ch] = moe.BF16(a)
						}
					}
					want := Reference(in[s].x, in[s].idx, in[s].w, H, K, Scaled, fp8)
					require.Less(t, RelError(out, want, H), 2e-2, "rank %d", s)
				}
			})
		}
	}
}

func mathFloat32bits(f float32) uint32     { return math.Float32bits(f) }
func mathFloat32frombits(b uint32) float32 { return math.Float32frombits(b) }

// llSlotsWant is the definition: the slot of pair i = t*K+k is the number
// of pairs before it routed to the same expert (-1: dropped).
func llSlotsWant(idx []int32, K int) []int {
	out := make([]int, len(idx))
	next := map[int32]int{}
	for i, e := range idx {
		out[i] = -1
		if e >= 0 {
			out[i] = next[e]
			next[e]++
		}
	}
	return out
}

// llPrefixModel is slotPrefix: pairs before token t0 per expert of [0, E).
func llPrefixModel(idx []int32, t0, K, E int) []int {
	hist := make([]int, E)
	for _, e := range idx[:t0*K] {
		if e >= 0 && int(e) < E {
			hist[e]++
		}
	}
	return hist
}

// llBatchModel is batchSlots then batchCount for tokens [c0, c0+nb): each
// pair's slot (-1: no expert), hist plus the batch's pairs before it with
// the same expert; then hist moves past the batch.
func llBatchModel(idx []int32, c0, nb, K, E int, hist []int) []int {
	batch := idx[c0*K : (c0+nb)*K]
	out := make([]int, len(batch))
	for i, e := range batch {
		out[i] = -1
		if e < 0 || int(e) >= E {
			continue
		}
		c := 0
		for _, f := range batch[:i] {
			if f == e {
				c++
			}
		}
		out[i] = hist[e] + c
	}
	for _, e := range batch {
		if e >= 0 && int(e) < E {
			hist[e]++
		}
	}
	return out
}

// llEntryWord, llEntryExpert and llEntrySlot are kernels.cu's: a pair's
// expert+1 in the low 13 bits, its slot+1 above (0: none).
func llEntryWord(e, slot int) uint32 { return uint32(e+1) | uint32(slot+1)<<13 }
func llEntryExpert(v uint32) int     { return int(v&0x1fff) - 1 }
func llEntrySlot(v uint32) int       { return int(v>>13) - 1 }

// llSlotsModel is moe_ll_dispatch's step 2: W workers, each a token range,
// its prefix, then batches of 32 tokens.
func llSlotsModel(idx []int32, T, K, E, W int) []int {
	out := make([]int, T*K)
	for b := range W {
		t0, t1 := T*b/W, T*(b+1)/W
		hist := llPrefixModel(idx, t0, K, E)
		for c0 := t0; c0 < t1; c0 += 32 {
			nb := min(32, t1-c0)
			for i, slot := range llBatchModel(idx, c0, nb, K, E, hist) {
				out[c0*K+i] = slot
			}
		}
	}
	return out
}
