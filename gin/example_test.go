package gin_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// Two ranks as goroutines: rank 0 puts a greeting into rank 1's window with
// SignalInc; rank 1 waits for the signal, and the data is there.
func ExampleContext_Put() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: 1})
	if err != nil {
		panic(err)
	}
	wins := make([]*gin.Window, 2)
	var wg sync.WaitGroup
	for r, c := range comms { // RegisterWindow is collective
		wg.Add(1)
		go func() { defer wg.Done(); wins[r], _ = c.RegisterWindow(ctx, 64, 0) }()
	}
	wg.Wait()

	msg := "hello, rank 1"
	copy(wins[0].Bytes(), msg)
	x0, _ := comms[0].Context(0)
	if err := x0.Put(comms[0].World(), 1, wins[0], 0, wins[0], 0, len(msg), gin.SignalInc(0), gin.LocalNone); err != nil {
		panic(err)
	}

	x1, _ := comms[1].Context(0)
	v, err := x1.WaitSignal(ctx, 0, 1, 64)
	if err != nil {
		panic(err)
	}
	fmt.Printf("signal %d: %s\n", v, wins[1].Bytes()[:len(msg)])
	for _, c := range comms {
		c.Close()
	}
	// Output: signal 1: hello, rank 1
}

// PutValue stages a small value, so the caller's variable is free at once;
// a counter ticks when the put's source was consumed.
func ExampleContext_PutValue() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 1, gin.Config{Signals: 1, Counters: 1})
	if err != nil {
		panic(err)
	}
	c := comms[0]
	defer c.Close()
	win, _ := c.RegisterWindow(ctx, 16, 0)
	x, _ := c.Context(0)
	// Loopback: peer 0 of a one-rank world is this rank.
	if err := x.PutValue(c.World(), 0, win, 8, 0xCAFE, 2, gin.SignalAdd(0, 40)); err != nil {
		panic(err)
	}
	if err := x.Put(c.World(), 0, win, 0, win, 8, 2, gin.None, gin.CounterInc(0)); err != nil {
		panic(err)
	}
	if err := x.Flush(ctx); err != nil {
		panic(err)
	}
	sig, _ := x.WaitSignal(ctx, 0, 40, 64)
	n, _ := x.ReadCounter(0, 56)
	fmt.Printf("signal %d, counter %d, bytes % x\n", sig, n, win.Bytes()[:2])
	// Output: signal 40, counter 1, bytes fe ca
}
