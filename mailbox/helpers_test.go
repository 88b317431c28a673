package mailbox_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/mailbox"
	"github.com/stretchr/testify/require"
)

// scale picks an iteration count: n normally, small under the race
// detector or -short.
func scale(n, small int) int {
	if raceEnabled || testing.Short() {
		return small
	}
	return n
}

// local builds n ranks as goroutines with a mailbox each (not started);
// everything is closed when t ends.
func local(t *testing.T, n int, cfg mailbox.Config) ([]*gin.Comm, []*mailbox.Mailbox) {
	t.Helper()
	ctx := context.Background()
	comms, err := gin.NewLocal(ctx, n, gin.Config{Signals: int(cfg.SignalBase) + mailbox.SignalsNeeded(n)})
	require.NoError(t, err)
	boxes := make([]*mailbox.Mailbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range comms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			boxes[r], errs[r] = mailbox.New(ctx, comms[r], cfg)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for r := range comms {
			if boxes[r] != nil {
				require.NoError(t, boxes[r].Close())
			}
			comms[r].Close()
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return comms, boxes
}

// Message bodies of the tests: an 16-byte prefix (stream, seq) then a
// pattern of 64-bit words derived from both, so a body that is misplaced,
// stale or torn does not check.

// bodySize is the size of message seq of stream: seven in eight are small
// (8..512 bytes), one in eight log-uniform from 512 bytes to 64 KiB.
func bodySize(stream, seq uint64) int {
	h := mix(stream<<40 ^ seq)
	if h%8 != 0 {
		return 8 + int(h>>8%505)
	}
	shift := h >> 8 % 8 // 512 << 0..7 = 512 .. 64 KiB
	lo := uint64(512) << shift
	n := lo + h>>16%(lo+1)
	return int(min(n, 64<<10))
}

func mix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ x>>30) * 0xBF58476D1CE4E5B9
	x = (x ^ x>>27) * 0x94D049BB133111EB
	return x ^ x>>31
}

// fillBody writes message seq of stream into b.
func fillBody(b []byte, stream, seq uint64) {
	if len(b) >= 16 {
		binary.LittleEndian.PutUint64(b, stream)
		binary.LittleEndian.PutUint64(b[8:], seq)
	}
	x := mix(stream*1_000_003 + seq)
	i := prefixLen(b)
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], x+uint64(i))
	}
	for ; i < len(b); i++ {
		b[i] = byte(x >> (i % 8 * 8))
	}
}

// prefixLen is 16 for bodies that carry the (stream, seq) prefix, else 0.
func prefixLen(b []byte) int {
	if len(b) >= 16 {
		return 16
	}
	return 0
}

// checkBody reports how b differs from message seq of stream.
func checkBody(b []byte, stream, seq uint64) error {
	if want := bodySize(stream, seq); len(b) != want {
		return fmt.Errorf("stream %d message %d: %d bytes, want %d", stream, seq, len(b), want)
	}
	if len(b) >= 16 {
		if s, q := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]); s != stream || q != seq {
			return fmt.Errorf("stream %d message %d: prefix says stream %d message %d", stream, seq, s, q)
		}
	}
	x := mix(stream*1_000_003 + seq)
	i := prefixLen(b)
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != x+uint64(i) {
			return fmt.Errorf("stream %d message %d: word at byte %d is wrong", stream, seq, i)
		}
	}
	for ; i < len(b); i++ {
		if b[i] != byte(x>>(i%8*8)) {
			return fmt.Errorf("stream %d message %d: byte %d is wrong", stream, seq, i)
		}
	}
	return nil
}

// streamOf reads the stream and seq of a body of 16 bytes or more; shorter
// bodies are matched by size only (see tracker).
func streamOf(b []byte) (stream, seq uint64, ok bool) {
	if len(b) < 16 {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), true
}

// tracker checks, at a receiver, that each stream's messages arrive in
// order, complete and once. Streams are numbered by sender: stream
// sender*perSender+k. Not safe for concurrent use (the receive loop
// calls it).
type tracker struct {
	perSender int
	next      map[uint64]uint64 // next seq per stream
	total     int
	err       error
}

func newTracker(perSender int) *tracker {
	return &tracker{perSender: perSender, next: map[uint64]uint64{}}
}

// frame checks one body from sender from. Bodies under 16 bytes carry no
// prefix; they are checked against the next seq of each of the sender's
// streams, and must match exactly one.
func (k *tracker) frame(from int, body []byte) {
	k.total++
	if k.err != nil {
		return
	}
	stream, seq, ok := streamOf(body)
	if !ok {
		for j := range k.perSender {
			s := uint64(from*k.perSender + j)
			if checkBody(body, s, k.next[s]) == nil {
				stream, seq, ok = s, k.next[s], true
				break
			}
		}
		if !ok {
			k.err = fmt.Errorf("frame %d from rank %d: short body of %d bytes matches no stream's next message", k.total, from, len(body))
			return
		}
	}
	if int(stream)/k.perSender != from {
		k.err = fmt.Errorf("frame %d from rank %d carries stream %d", k.total, from, stream)
		return
	}
	if want := k.next[stream]; seq != want {
		k.err = fmt.Errorf("stream %d from rank %d: message %d arrived, want %d (lost, duplicated or reordered)", stream, from, seq, want)
		return
	}
	if err := checkBody(body, stream, seq); err != nil {
		k.err = err
		return
	}
	k.next[stream]++
}
