package mailbox_test

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/mailbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// resident is the number of pages of b that the kernel holds (mincore(2):
// for a shared-memory file mapping, the file's pages that exist, whoever
// touched them).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(b)+page-1)/page)
	// x/sys/unix has no wrapper; the pointers are passed in the call
	// expression, as unsafe's rules for syscalls ask.
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// A window's rings take memory only once their pair carries frames: of 8
// ranks, rank 0 sends a ring's lap to rank 1 and nothing else is sent, so
// only rank 1's inbox ring from rank 0 and rank 0's staging ring towards
// rank 1 have pages; the other 2 × 8 × 8 - 2 rings have none, whatever
// New and Start did.
func TestRingsCommitOnFirstUse(t *testing.T) {
	const n, ring = 8, 64 << 10
	_, boxes := local(t, n, mailbox.Config{RingBytes: ring})
	var got atomic.Int64
	for _, b := range boxes {
		require.NoError(t, b.Start(mailbox.Handler{Frame: func(int, mailbox.Kind, []byte) { got.Add(1) }}))
	}
	lay := boxes[0].Layout()
	pages := func(r int, off int) int { return resident(t, boxes[r].Window().Bytes()[off:off+ring]) }
	for r := range n {
		for p := range n {
			assert.Zero(t, pages(r, lay.InboxOffset(p)), "rank %d inbox from %d before any send", r, p)
			assert.Zero(t, pages(r, lay.StagingOffset(p)), "rank %d staging to %d before any send", r, p)
		}
	}

	const frames = 2 * ring / 1024 // two laps of 1 KiB frames
	body := make([]byte, 1024-16)
	for range frames {
		require.NoError(t, boxes[0].Send(1, 1, body))
	}
	ctx := testutils.Deadline(t, 30*time.Second)
	for got.Load() < frames {
		require.NoError(t, ctx.Err(), "%d of %d frames received", got.Load(), frames)
		time.Sleep(time.Millisecond)
	}
	all := ring / os.Getpagesize()
	for r := range n {
		for p := range n {
			in, st := pages(r, lay.InboxOffset(p)), pages(r, lay.StagingOffset(p))
			switch {
			// Two laps wrote every page of the pair's rings (fewer only if
			// the host swapped some out).
			case r == 1 && p == 0:
				assert.Greater(t, in, all/2, "rank 1's inbox from rank 0 carried two laps")
				assert.Zero(t, st)
			case r == 0 && p == 1:
				assert.Greater(t, st, all/2, "rank 0's staging towards rank 1 carried two laps")
				assert.Zero(t, in)
			default:
				assert.Zero(t, in, "rank %d inbox from %d: no frames, no pages", r, p)
				assert.Zero(t, st, "rank %d staging to %d: no frames, no pages", r, p)
			}
		}
	}
}
