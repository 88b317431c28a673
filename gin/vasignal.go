package gin

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/rdmactor/rdmactor/internal/memword"
	"github.com/rdmactor/rdmactor/transport/rdma"
)

// vaWord checks that (w, off) can be a VA signal: a StrictOrdering window
// and an 8-byte aligned word inside it.
func (w *Window) vaWord(what string, off int) error {
	if w == nil {
		return fmt.Errorf("%s: nil window: %w", what, ErrBadArgument)
	}
	if w.flags&StrictOrdering == 0 {
		return fmt.Errorf("%s: window not registered with StrictOrdering: %w", what, ErrBadArgument)
	}
	if off%8 != 0 {
		return fmt.Errorf("%s: offset %d not 8-byte aligned: %w", what, off, ErrOutOfBounds)
	}
	return w.bounds(what, off, 8)
}

// vaSignal enters the comm and returns the VA signal word at (w, off); the
// caller leaves when done.
func (c *Comm) vaSignal(w *Window, off int) (*atomic.Uint64, error) {
	if err := w.vaWord("VA signal", off); err != nil {
		return nil, err
	}
	if w.c != c {
		return nil, fmt.Errorf("VA signal: window of another comm: %w", ErrBadArgument)
	}
	if err := c.enter(); err != nil {
		return nil, err
	}
	return memword.Uint64(w.Bytes(), off), nil
}

// vaSignalBits is vaSignal for a read of the low bits bits, returned as the
// mask; bits is checked before the comm is entered.
func (c *Comm) vaSignalBits(w *Window, off, bits int) (*atomic.Uint64, uint64, error) {
	m, err := mask(bits, 64)
	if err != nil {
		return nil, 0, err
	}
	word, err := c.vaSignal(w, off)
	return word, m, err
}

// ReadSignalVA returns the low bits bits of the VA signal at byte offset
// off of this rank's part of w (ncclGin::readSignal on a window, NCCL 2.28).
func (x *Context) ReadSignalVA(w *Window, off int, bits int) (uint64, error) {
	word, m, err := x.c.vaSignalBits(w, off, bits)
	if err != nil {
		return 0, err
	}
	defer x.c.leave()
	return word.Load() & m, nil
}

// WaitSignalVA waits until the VA signal at (w, off) reaches least in
// rolling order. Ends as WaitSignal.
func (x *Context) WaitSignalVA(ctx context.Context, w *Window, off int, least uint64, bits int) (uint64, error) {
	word, m, err := x.c.vaSignalBits(w, off, bits)
	if err != nil {
		return 0, err
	}
	defer x.c.leave()
	var bell rdma.Doorbell
	if b, ok := w.mr.(rdma.Belled); ok && x.c.poller == nil {
		bell = b.Doorbell() // rung by puts that add to a word of this window
	}
	return x.c.wait(ctx, word, least, m, "VA signal at offset", off, bell)
}

// ResetSignalVA sets the VA signal at (w, off) to 0; like ResetSignal it
// may not race with peers signalling it.
func (x *Context) ResetSignalVA(w *Window, off int) error {
	word, err := x.c.vaSignal(w, off)
	if err != nil {
		return err
	}
	defer x.c.leave()
	word.Store(0)
	return nil
}
