package cuda

import (
	"time"
)

// Stream is a CUDA stream that does not synchronize with the legacy default
// stream (CU_STREAM_NON_BLOCKING), so kernels of several ranks in one
// process run side by side.
type Stream struct {
	c *Context
	h uintptr
}

// NewStream creates a non-blocking stream (cuStreamCreate).
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	err := c.do(func() error { return check("cuStreamCreate", fnStreamCreate(&s.h, streamNonBlocking)) })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Context is the stream's context.
func (s *Stream) Context() *Context { return s.c }

// Query reports whether all work queued on s finished (cuStreamQuery): a
// kernel fault shows here as an *Error (e.g. CUDA_ERROR_ILLEGAL_ADDRESS).
func (s *Stream) Query() (bool, error) {
	var done bool
	err := s.c.do(func() error {
		r := fnStreamQuery(s.h)
		if r == errNotReady {
			return nil
		}
		done = true
		return check("cuStreamQuery", r)
	})
	return done, err
}

// Synchronize waits for all work queued on s (cuStreamSynchronize). It
// blocks an OS thread for as long: use Query with a deadline for kernels
// that wait on peers.
func (s *Stream) Synchronize() error {
	return s.c.do(func() error { return check("cuStreamSynchronize", fnStreamSynchronize(s.h)) })
}

// Close destroys the stream (cuStreamDestroy_v2).
func (s *Stream) Close() error {
	return s.c.do(func() error { return check("cuStreamDestroy_v2", fnStreamDestroy(s.h)) })
}

// Event is a CUDA event with timing enabled.
type Event struct {
	c *Context
	h uintptr
}

// NewEvent creates a timing event (cuEventCreate, CU_EVENT_DEFAULT).
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	err := c.do(func() error { return check("cuEventCreate", fnEventCreate(&e.h, eventDefault)) })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record queues the event on s (cuEventRecord).
func (e *Event) Record(s *Stream) error {
	return e.c.do(func() error { return check("cuEventRecord", fnEventRecord(e.h, s.h)) })
}

// Synchronize waits for the event (cuEventSynchronize).
func (e *Event) Synchronize() error {
	return e.c.do(func() error { return check("cuEventSynchronize", fnEventSynchronize(e.h)) })
}

// Close destroys the event (cuEventDestroy_v2).
func (e *Event) Close() error {
	return e.c.do(func() error { return check("cuEventDestroy_v2", fnEventDestroy(e.h)) })
}

// Elapsed is the GPU time between two recorded, completed events
// (cuEventElapsedTime; resolution about 0.5 µs).
func Elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := start.c.do(func() error { return check("cuEventElapsedTime", fnEventElapsedTime(&ms, start.h, end.h)) })
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}
