package barrier_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
)

// Three ranks as goroutines: each puts its rank into every rank's window
// (its own included), passes a barrier with a put fence, and then reads
// every rank's value.
func ExampleSession_Sync() {
	const n = 3
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Reserve the barrier's slots when the Comms are made.
	comms, err := gin.NewLocal(ctx, n, gin.Config{Signals: barrier.Requirement(n, 1)})
	if err != nil {
		panic(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	sums := make([]int, n)
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			win, err := c.RegisterWindow(ctx, n, 0) // collective
			if err != nil {
				panic(err)
			}
			x, _ := c.Context(0)
			b, err := barrier.NewWorldSession(x, 0, 0)
			if err != nil {
				panic(err)
			}
			for p := range n {
				if err := x.PutValue(c.World(), p, win, r, uint64(r+1), 1, gin.None); err != nil {
					panic(err)
				}
			}
			if err := b.Sync(ctx, barrier.FencePut); err != nil {
				panic(err)
			}
			for _, v := range win.Bytes() {
				sums[r] += int(v)
			}
		})
	}
	wg.Wait()
	fmt.Println(sums)
	// Output: [6 6 6]
}
