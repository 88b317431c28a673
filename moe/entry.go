package moe

import "math"

// A routing entry carries one dispatched token's routing to the rank that
// receives its row: the source token index, then TopK expert ids local to
// that rank, then TopK weights as float32 bits, each a uint32 word. Both
// the Handle and two-sided dispatches (bench/twosided) send them.

// EntryWords is the number of uint32 words of a routing entry for top-k
// routing.
func EntryWords(topk int) int { return 1 + 2*topk }

// PutEntry writes into e (EntryWords(len(idx)) words) the entry of token t
// for rank r, whose choices are idx and weights w (TopK each): ids of r's
// experts become local (id mod l, with l experts per rank) with their
// weight; any other choice becomes id -1, weight 0.
func PutEntry(e []uint32, t int, idx []int32, w []float32, l, r int) {
	k := len(idx)
	e[0] = uint32(t)
	for q, id := range idx {
		wq := float32(0)
		if id >= 0 && int(id)/l == r {
			id, wq = id%int32(l), w[q]
		} else {
			id = -1
		}
		e[1+q] = uint32(id)
		e[1+k+q] = math.Float32bits(wq)
	}
}

// ReadEntry is PutEntry's reverse: it returns the source token of entry e
// and writes its local expert ids to idx and weights to w (TopK each),
// adding one to perExpert[id] for each id that is not -1.
func ReadEntry(e []uint32, idx []int32, w []float32, perExpert []int) int32 {
	k := len(idx)
	for q := range idx {
		id := int32(e[1+q])
		idx[q] = id
		w[q] = math.Float32frombits(e[1+k+q])
		if id >= 0 {
			perExpert[id]++
		}
	}
	return int32(e[0])
}
