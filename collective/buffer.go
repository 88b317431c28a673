package collective

import (
	"fmt"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/unsafeview"
)

// Buffer is where a collective reads or writes: byte offset Offset of a
// window registered on the collective's gin.Comm. A buffer that peers write
// into (every destination) must be symmetric: the same window and the
// same Offset on every rank, as OpenSHMEM requires of collective
// destinations (symmetric addresses) and NCCL's symmetric kernels of
// registered windows. Sources are read only by their own rank.
type Buffer struct {
	Window *gin.Window
	Offset int
}

// At is the buffer at byte offset off of w.
func At(w *gin.Window, off int) Buffer { return Buffer{Window: w, Offset: off} }

// Elements views count elements of type T at byte offset off of this
// rank's part of w, for filling sources and reading results. off must be a
// multiple of T's size and the elements must lie in the window; the view
// is valid until the window's Comm is closed.
func Elements[T Element](w *gin.Window, off, count int) ([]T, error) {
	b := Buffer{w, off}
	if err := b.check("collective.Elements", "view", count, TypeOf[T]()); err != nil {
		return nil, err
	}
	return unsafeview.As[T](b.bytes(count * TypeOf[T]().Size())), nil
}

// check validates b, the what ("source", "destination", "view") of
// call, for count elements of dt: a window, in bounds without overflow,
// aligned for dt. (Whether the window belongs to the collective's
// gin.Comm is checked by gin at the first put: gin has no accessor for it.)
// Names are formatted only on error, so a good call allocates nothing.
func (b Buffer) check(call, what string, count int, dt DataType) error {
	es := dt.Size()
	var bad string
	err := ErrBadArgument
	switch {
	case es == 0:
		bad = fmt.Sprintf("data type %v", dt)
	case b.Window == nil:
		bad = "nil window"
	case count < 0:
		bad = fmt.Sprintf("count %d", count)
	case b.Offset < 0 || b.Offset%es != 0:
		bad = fmt.Sprintf("offset %d not a multiple of the %d-byte %v", b.Offset, es, dt)
	case count > (b.Window.Size()-b.Offset)/es || b.Offset > b.Window.Size():
		bad, err = fmt.Sprintf("%d %v at offset %d outside a window of %d bytes", count, dt, b.Offset, b.Window.Size()), gin.ErrOutOfBounds
	default:
		return nil
	}
	return fmt.Errorf("%s: %s: %s: %w", call, what, bad, err)
}

// bytes is this rank's n bytes of b (checked by check).
func (b Buffer) bytes(n int) []byte { return b.Window.Bytes()[b.Offset : b.Offset+n : b.Offset+n] }

// overlaps reports whether n bytes at b and m bytes at o share memory.
func (b Buffer) overlaps(n int, o Buffer, m int) bool {
	return b.Window == o.Window && n > 0 && m > 0 && b.Offset < o.Offset+m && o.Offset < b.Offset+n
}
