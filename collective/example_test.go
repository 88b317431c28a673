package collective_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
)

// Four ranks as goroutines sum a vector: each contributes its rank+1 in
// every element.
func ExampleComm_AllReduce() {
	const n, count = 4, 5
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The collective Comm's signals are reserved when the gin Comms are made.
	comms, err := gin.NewLocal(ctx, n, gin.Config{Signals: collective.Requirement(n)})
	if err != nil {
		panic(err)
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	results := make([][]float32, n)
	var wg sync.WaitGroup
	for r, g := range comms {
		wg.Go(func() {
			c, err := collective.New(ctx, g, collective.Config{}) // collective
			if err != nil {
				panic(err)
			}
			win, err := g.RegisterWindow(ctx, 2*4*count, 0) // send at 0, receive at 20
			if err != nil {
				panic(err)
			}
			send, _ := collective.Elements[float32](win, 0, count)
			for i := range send {
				send[i] = float32(r + 1)
			}
			if err := c.AllReduce(ctx, collective.At(win, 4*count), collective.At(win, 0), count, collective.Float32, collective.Sum); err != nil {
				panic(err)
			}
			results[r], _ = collective.Elements[float32](win, 4*count, count)
		})
	}
	wg.Wait()
	fmt.Println(results[0], results[3])
	// Output: [10 10 10 10 10] [10 10 10 10 10]
}
