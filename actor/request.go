package actor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// requestForever is the future timeout of a Request whose ctx has no
// deadline: protoactor-go's futures need one, and ctx's end completes the
// future itself.
const requestForever = 24 * time.Hour

// Request sends msg to pid and waits for the answer: protoactor-go's
// RootContext.RequestFuture(pid, msg, timeout).Result(), bounded by ctx
// instead of a timeout, and with a rank's loss named. A Future only knows
// protoactor-go's ErrDeadLetter; Request returns:
//   - an error wrapping ErrRankGone (and gin.ErrPeerLost where the rank
//     was lost) when pid's rank is gone before the send or while the
//     request waits; such a request fails within 100 ms of the loss's
//     detection (docs/actors.md, "A killed rank");
//   - ErrDeadLetter when the target actor does not exist;
//   - Tell's errors for a PID that names no actor of the job;
//   - ctx's error when ctx ends first, in which case a late answer is
//     dropped.
func (n *Node) Request(ctx context.Context, pid *PID, msg any) (any, error) {
	if pid == nil {
		return nil, fmt.Errorf("request: nil PID: %w", gin.ErrBadArgument)
	}
	r, onRank := RankOf(pid)
	switch {
	case onRank && r >= n.size:
		return nil, fmt.Errorf("request %s/%s: rank %d of a job of %d: %w", pid.Address, short(pid.Id), r, n.size, gin.ErrPeerOutOfRange)
	case !onRank && pid.Address != localAddress:
		return nil, fmt.Errorf("request %s/%s: the address names no rank of this job: %w", short(pid.Address), short(pid.Id), gin.ErrPeerOutOfRange)
	}
	remote := onRank && r != n.rank
	gone := func() error {
		if !remote {
			return nil
		}
		if err := n.Gone(r); err != nil {
			return fmt.Errorf("request %s/%s: %w", pid.Address, short(pid.Id), err)
		}
		return nil
	}
	if err := gone(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("request %s/%s: %w", pid.Address, short(pid.Id), err)
	}
	timeout := requestForever
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		timeout = max(time.Until(dl), time.Nanosecond)
	}
	f := n.system.Root.RequestFuture(pid, msg, timeout)
	type answer struct {
		v   any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		v, err := f.Result()
		done <- answer{v, err}
	}()
	select {
	case a := <-done:
		switch {
		case a.err == nil:
			return a.v, nil
		case errors.Is(a.err, ErrDeadLetter):
			if err := gone(); err != nil {
				return nil, err
			}
		case errors.Is(a.err, ErrTimeout) && hasDeadline:
			// The future's timeout is ctx's deadline; its timer may
			// fire before ctx's.
			return nil, fmt.Errorf("request %s/%s: %w", pid.Address, short(pid.Id), context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("request %s/%s: %w", pid.Address, short(pid.Id), a.err)
	case <-ctx.Done():
		// Answer a cancelled request's future, so that its goroutine and
		// registration end now rather than at its timeout. At ctx's
		// deadline the future's own timer ends it (an answer racing that
		// timer would race protoactor-go's unlocked result fields).
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			failFuture(n.system.ProcessRegistry, r, f.PID().Id)
		}
		return nil, fmt.Errorf("request %s/%s: %w", pid.Address, short(pid.Id), ctx.Err())
	}
}
