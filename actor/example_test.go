package actor_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/actor"
)

// Greeting and Reply cross ranks: they are registered by name.
type (
	Greeting struct{ Name string }
	Reply    struct{ Text string }
)

func init() {
	actor.RegisterMessage[Greeting]()
	actor.RegisterMessage[Reply]()
}

// Two ranks as goroutines of this process: an actor on rank 1 answers a
// request from rank 0, and a watcher on rank 0 sees it stop.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nodes, err := actor.StartLocal(ctx, 2, actor.Config{})
	if err != nil {
		panic(err)
	}
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()

	// Rank 1: a named actor that answers Greetings.
	nodes[1].SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if g, ok := c.Message().(*Greeting); ok {
			c.Respond(&Reply{Text: "hello, " + g.Name + ", from rank 1"})
		}
	}), "greeter")

	// Rank 0: ask it, across ranks.
	greeter := nodes[0].PID(1, "greeter")
	res, err := nodes[0].Root().RequestFuture(greeter, &Greeting{Name: "rank 0"}, time.Second).Result()
	if err != nil {
		panic(err)
	}
	fmt.Println(res.(*Reply).Text)

	// Death watch across ranks: watch it, stop it, see Terminated.
	stopped := make(chan *actor.Terminated, 1)
	watcher := nodes[0].Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.PID:
			c.Watch(m)
			c.Respond(true)
		case *actor.Terminated:
			stopped <- m
		}
	}))
	nodes[0].Root().RequestFuture(watcher, greeter, time.Second).Wait()
	nodes[0].Root().Stop(greeter)
	t := <-stopped
	fmt.Printf("%s/%s terminated: %v\n", t.Who.Address, t.Who.Id, t.Why)
	// Output:
	// hello, rank 0, from rank 1
	// rdmactor:1/greeter terminated: Stopped
}
