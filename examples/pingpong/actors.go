package main

import (
	"sync/atomic"
	"time"

	"github.com/rdmactor/rdmactor/actor"
)

// The benchmark's actors run unchanged on both transports: they only see
// protoactor-go's API.

// pong answers every request with the message it got.
func pong(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		if c.Sender() != nil {
			c.Respond(c.Message())
		}
	}
}

// pingRun asks the pinger for n round trips to Target; the samples come
// back on Out.
type pingRun struct {
	Target *actor.PID
	N      int
	Msg    any
	Out    chan []time.Duration
}

// pinger sends one request at a time and times each round trip.
type pinger struct {
	run     pingRun
	samples []time.Duration
	sent    time.Time
}

func (p *pinger) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *pingRun:
		p.run, p.samples = *m, make([]time.Duration, 0, m.N)
		p.sent = time.Now()
		c.Request(m.Target, m.Msg)
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default: // the answer
		p.samples = append(p.samples, time.Since(p.sent))
		if len(p.samples) == p.run.N {
			p.run.Out <- p.samples
			return
		}
		p.sent = time.Now()
		c.Request(p.run.Target, p.run.Msg)
	}
}

// sinkExpect arms the sink: Done is closed once N messages have arrived.
type sinkExpect struct {
	N    int
	Done chan struct{}
}

// sink counts messages.
type sink struct {
	n    atomic.Int64 // read by the driver when a run times out
	want sinkExpect
}

func (s *sink) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *sinkExpect:
		s.n.Store(0)
		s.want = *m
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	default:
		if s.n.Add(1) == int64(s.want.N) {
			close(s.want.Done)
		}
	}
}
