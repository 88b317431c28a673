package gin

import (
	"context"
	"fmt"
)

// Signal shadows: one local word per signal that only its owner changes,
// holding the value the owner expects the signal to reach next (NCCL 2.29's
// signal shadows; barriers keep their epochs in them).

func (c *Comm) shadowIndex(s Signal) error {
	if err := c.check(); err != nil {
		return err
	}
	if int(s) >= c.cfg.Signals {
		return fmt.Errorf("signal shadow %d of %d: %w", s, c.cfg.Signals, ErrUnknownSignal)
	}
	return nil
}

// ReadSignalShadow returns the shadow of signal s.
func (x *Context) ReadSignalShadow(s Signal) (uint64, error) {
	if err := x.c.shadowIndex(s); err != nil {
		return 0, err
	}
	return x.c.shadows[s].Load(), nil
}

// IncreaseSignalShadow adds delta to the shadow of signal s and returns the
// new shadow.
func (x *Context) IncreaseSignalShadow(s Signal, delta uint64) (uint64, error) {
	if err := x.c.shadowIndex(s); err != nil {
		return 0, err
	}
	return x.c.shadows[s].Add(delta), nil
}

// WaitSignalMeetShadow waits until the low bits bits of signal s reach its
// shadow (rolling order) and returns the signal's value. Ends as WaitSignal.
func (x *Context) WaitSignalMeetShadow(ctx context.Context, s Signal, bits int) (uint64, error) {
	if err := x.c.shadowIndex(s); err != nil {
		return 0, err
	}
	return x.WaitSignal(ctx, s, x.c.shadows[s].Load(), bits)
}
