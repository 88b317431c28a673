package moe_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/moe"
)

// Two ranks (goroutines, over shm) with two experts each: every token
// goes to expert 1 (rank 0) with weight 0.25 and expert 2 (rank 1) with
// weight 0.75; the experts multiply by 2 and 4, so each token comes back
// as x * (0.25*2 + 0.75*4) = 3.5x.
func ExampleHandle() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{})
	if err != nil {
		panic(err)
	}
	const H, K = 4, 2
	outs := make([][]float32, 2)
	var wg sync.WaitGroup
	for r, g := range comms {
		wg.Go(func() {
			defer g.Close()
			h, err := moe.New[float32](ctx, g, moe.Config{Sizes: moe.Sizes{Hidden: H, TopK: K, NumExperts: 4, MaxTokens: 2}})
			if err != nil {
				panic(err)
			}
			x := h.Input()[:2*H] // two tokens, written in place: no copy
			for i := range x {
				x[i] = float32(10*r + i)
			}
			recv, err := h.Dispatch(ctx, x, []int32{1, 2, 1, 2}, []float32{0.25, 0.75, 0.25, 0.75})
			if err != nil {
				panic(err)
			}
			scratch := make([]float32, 2*H)
			for i := range recv.NumRecv { // the experts, in place
				moe.ExpertOutput(recv.X[i*H:(i+1)*H], recv, i, K, scratch, func(e int, row []float32, out []float32) {
					global := r*h.LocalExperts() + e
					for j, v := range row {
						out[j] = float32(global*2) * v
					}
				})
			}
			outs[r] = make([]float32, 2*H)
			if err := h.Combine(ctx, recv.X, outs[r]); err != nil {
				panic(err)
			}
			if err := h.Close(ctx); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("rank 0:", outs[0])
	fmt.Println("rank 1:", outs[1])
	// Output:
	// rank 0: [0 3.5 7 10.5 14 17.5 21 24.5]
	// rank 1: [35 38.5 42 45.5 49 52.5 56 59.5]
}
