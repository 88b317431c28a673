package remote

import "sync"

// signal is a one-shot event.
type signal struct {
	once *sync.Once
	c    chan struct{}
}

func newSignal() signal { return signal{once: new(sync.Once), c: make(chan struct{})} }

func (s signal) fire() { s.once.Do(func() { close(s.c) }) }

func (s signal) fired() bool {
	select {
	case <-s.c:
		return true
	default:
		return false
	}
}
