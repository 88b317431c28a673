package actor

import (
	"sync/atomic"
	"time"

	protoactor "github.com/asynkron/protoactor-go/actor"
)

// logLimiter lets through at most logBurst warnings per second, and
// counts the rest into the next one that passes.
type logLimiter struct {
	second     atomic.Int64 // unix second of the current window
	n          atomic.Int64 // warnings in it
	suppressed atomic.Int64
}

const logBurst = 20

func (l *logLimiter) warn(system *protoactor.ActorSystem, msg string, args ...any) {
	now := time.Now().Unix()
	if s := l.second.Load(); s != now && l.second.CompareAndSwap(s, now) {
		l.n.Store(0)
	}
	if l.n.Add(1) > logBurst {
		l.suppressed.Add(1)
		return
	}
	if s := l.suppressed.Swap(0); s > 0 {
		args = append(args, "suppressed", s)
	}
	system.Logger().Warn("rdmactor: "+msg, args...)
}
