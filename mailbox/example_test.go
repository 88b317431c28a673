package mailbox_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
)

// Two ranks as goroutines: rank 0 sends three frames to rank 1, whose
// receive loop hands them over in order.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	comms, err := gin.NewLocal(ctx, 2, gin.Config{Signals: mailbox.SignalsNeeded(2)})
	if err != nil {
		panic(err)
	}
	boxes := make([]*mailbox.Mailbox, 2)
	var wg sync.WaitGroup
	for r, c := range comms { // New is collective
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := mailbox.New(ctx, c, mailbox.Config{RingBytes: 64 << 10})
			if err != nil {
				panic(err)
			}
			boxes[r] = b
		}()
	}
	wg.Wait()

	got := make(chan string, 3)
	boxes[1].Start(mailbox.Handler{Frame: func(from int, kind mailbox.Kind, body []byte) {
		got <- fmt.Sprintf("from rank %d, kind %d: %s", from, kind, body) // body is only valid here
	}})
	for _, s := range []string{"one", "two", "three"} {
		if err := boxes[0].Send(1, 1, []byte(s)); err != nil {
			panic(err)
		}
	}
	for range 3 {
		fmt.Println(<-got)
	}
	for r := range boxes {
		boxes[r].Close()
		comms[r].Close()
	}
	// Output:
	// from rank 0, kind 1: one
	// from rank 0, kind 1: two
	// from rank 0, kind 1: three
}
