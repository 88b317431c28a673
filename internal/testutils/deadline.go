package testutils

import (
	"context"
	"testing"
	"time"
)

// deadlineMargin is kept between a Deadline context's end and the test
// binary's own deadline, so a test can still report before being killed.
const deadlineMargin = 5 * time.Second

// Deadline returns a context that ends after d, or deadlineMargin before the
// test binary's deadline (-test.timeout) if that comes first. It is cancelled
// when the test ends (t.Cleanup).
func Deadline(t testing.TB, d time.Duration) context.Context {
	end := time.Now().Add(d)
	if td, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := td.Deadline(); ok && dl.Add(-deadlineMargin).Before(end) {
			end = dl.Add(-deadlineMargin)
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), end)
	t.Cleanup(cancel)
	return ctx
}
