// Command putsignal is rdmactor's first example: every rank puts a block
// into its right neighbour's window with SignalInc, waits for its own
// signal, checks the block its left neighbour put, and prints one line.
//
// Run it as separate processes through the launcher:
//
//	go build -o bin/putsignal ./examples/putsignal
//	go run ./cmd/rdmarun -np 4 bin/putsignal
//
// or with ranks as goroutines of one process: putsignal -local 4.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

func main() {
	local := flag.Int("local", 0, "run this many ranks as goroutines of this process instead of reading RDMACTOR_* from the launcher")
	size := flag.Int("bytes", 64<<10, "block size in bytes")
	timeout := flag.Duration("timeout", 30*time.Second, "deadline for the whole run")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	if *local > 0 {
		comms, err := gin.NewLocal(ctx, *local, gin.Config{Signals: 1})
		if err != nil {
			log.Fatal(err)
		}
		var wg sync.WaitGroup
		failed := false
		var mu sync.Mutex
		for _, c := range comms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := run(ctx, c, *size); err != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
					fmt.Fprintf(os.Stderr, "rank %d: %v\n", c.Rank(), err)
				}
			}()
		}
		wg.Wait()
		if failed {
			os.Exit(1)
		}
		return
	}
	c, err := gin.Init(ctx, gin.Config{Signals: 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, c, *size); err != nil {
		log.Fatalf("rank %d: %v", c.Rank(), err)
	}
}

// run is one rank's part: the window holds the block to send at [0, size)
// and the block received at [size, 2*size).
func run(ctx context.Context, c *gin.Comm, size int) (err error) {
	defer func() {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}()
	win, err := c.RegisterWindow(ctx, 2*size, 0)
	if err != nil {
		return err
	}
	me, n := c.Rank(), c.Size()
	fill(win.Bytes()[:size], me)
	x, err := c.Context(0)
	if err != nil {
		return err
	}
	right := (me + 1) % n
	start := time.Now()
	if err := x.Put(c.World(), right, win, size, win, 0, size, gin.SignalInc(0), gin.LocalNone); err != nil {
		return fmt.Errorf("put to rank %d: %w", right, err)
	}
	if _, err := x.WaitSignal(ctx, 0, 1, 64); err != nil {
		return err
	}
	elapsed := time.Since(start)
	left := (me + n - 1) % n
	want := make([]byte, size)
	fill(want, left)
	if !bytes.Equal(win.Bytes()[size:], want) {
		return fmt.Errorf("block from rank %d is wrong", left)
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	// Nobody may unmap before everyone has read.
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	fmt.Printf("rank %d/%d: got %d bytes from rank %d via %s, verified (put+wait %v)\n",
		me, n, size, left, c.Transport(), elapsed.Round(time.Microsecond))
	return nil
}

// fill writes a pattern that names the sending rank.
func fill(b []byte, rank int) {
	for i := range b {
		b[i] = byte(rank*31 + i)
	}
}
