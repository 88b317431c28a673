package actor

import (
	"sync/atomic"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// Dispatcher is the dispatcher of Props made by this package's
// PropsFromProducer and PropsFromFunc: it runs an actor's mailbox on a
// pooled goroutine instead of a new one per scheduling, as protoactor-go's
// default dispatcher does.
//
// Why: a new goroutine starts with a small stack, and a message to another
// rank is encoded (msgpack reflection) and put (gin's endpoint layers)
// several frames deep, so every actor run that sends across ranks would
// grow and copy its stack, twice per round trip (see BenchmarkRoundTrip).
// Pooled goroutines keep their grown stacks.
var Dispatcher protoactor.Dispatcher = newPoolDispatcher(300)

// maxIdleWorkers bounds the goroutines kept waiting for work; a worker
// that finds this many idle already exits.
const maxIdleWorkers = 256

// poolDispatcher hands each scheduled mailbox run to an idle pooled
// goroutine, or starts one when none is idle. Idle goroutines wait on an
// unbuffered channel, so a hand-off is a direct wake-up. As many run at
// once as mailboxes are scheduled at once (protoactor-go's default has no
// limit either); at most maxIdleWorkers stay when they are done.
type poolDispatcher struct {
	throughput int
	idle       chan func()
	nIdle      atomic.Int64
}

func newPoolDispatcher(throughput int) *poolDispatcher {
	return &poolDispatcher{throughput: throughput, idle: make(chan func())}
}

// Schedule runs fn on a pooled goroutine.
func (d *poolDispatcher) Schedule(fn func()) {
	select {
	case d.idle <- fn:
	default:
		go d.worker(fn)
	}
}

// Throughput is the number of messages a mailbox processes per run before
// it yields (protoactor-go's default: 300).
func (d *poolDispatcher) Throughput() int { return d.throughput }

func (d *poolDispatcher) worker(fn func()) {
	for {
		fn()
		if d.nIdle.Add(1) > maxIdleWorkers {
			d.nIdle.Add(-1)
			return
		}
		fn = <-d.idle
		d.nIdle.Add(-1)
	}
}
