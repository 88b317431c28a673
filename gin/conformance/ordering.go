package conformance

import (
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
)

// layout gives each of n puts, of sizes cycling through sizes, its own
// region at an unaligned offset: put k lies at offs[k].
type layout struct {
	sizes []int
	offs  []int
	end   int
}

func newLayout(sizes []int, n int) layout {
	l := layout{}
	off := 0
	for k := range n {
		off += 1 + k%7 // unaligned, and never adjacent
		l.sizes = append(l.sizes, sizes[k%len(sizes)])
		l.offs = append(l.offs, off)
		off += sizes[k%len(sizes)]
	}
	l.end = off + 8
	return l
}

func (l layout) region(b []byte, k int) []byte { return b[l.offs[k] : l.offs[k]+l.sizes[k]] }

var orderingSizes = []int{1, 7, 64, 4093, 65536, 1 << 20}

func testOrdering(t *testing.T, f Factory) {
	// gin/doc.go, "What a signal promises": "when a signal update from a put
	// or Signal is visible at the peer, the data of that put and of every
	// earlier put of the same Context to the same peer is visible too."
	// NCCL nccl_device/gin.h (2.28), ncclGin::put with ncclGin_SignalInc.
	t.Run("SignalledPuts", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		n := len(orderingSizes) * scale(6, 3)
		l := newLayout(orderingSizes, n)
		src, dst := e.windows(l.end, 0), e.windows(l.end, 0)
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for k := range n {
					fill(l.region(src[0].Bytes(), k), uint64(k))
				}
				for k := range n {
					if err := x.Put(e.comms[0].World(), 1, dst[0], l.offs[k], src[0], l.offs[k], l.sizes[k], gin.SignalInc(0), gin.LocalNone); err != nil {
						return fmt.Errorf("put %d: %w", k, err)
					}
				}
				return x.Flush(e.ctx)
			}
			for checked := 0; checked < n; {
				v, err := x.WaitSignal(e.ctx, 0, uint64(checked+1), 64)
				if err != nil {
					return err
				}
				if v > uint64(n) {
					return fmt.Errorf("signal %d after %d puts", v, n)
				}
				for ; checked < int(v); checked++ {
					if err := checkFill(l.region(dst[1].Bytes(), checked), uint64(checked)); err != nil {
						return fmt.Errorf("signal at %d, but put %d (%d bytes at offset %d) is not there: %w",
							v, checked, l.sizes[checked], l.offs[checked], err)
					}
				}
			}
			return nil
		})
	})

	// The same sentence across endpoints: puts without a signal (the data
	// endpoint) and puts signalling another signal (another SCEndpoint),
	// then one Signal: it implies them all. gin/put.go, Context.Signal:
	// "Like a put's signal, it implies every earlier put of this context to
	// that peer." NCCL gin.h ncclGin::signal.
	t.Run("SignalAfterUnsignalledPuts", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		rounds := scale(6, 3)
		per := len(orderingSizes)
		l := newLayout(orderingSizes, rounds*per)
		src, dst := e.windows(l.end, 0), e.windows(l.end, 0)
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for k := range rounds * per {
					fill(l.region(src[0].Bytes(), k), uint64(k)+1000)
				}
				for round := range rounds {
					for i := range per {
						k := round*per + i
						remote := gin.None
						if i%2 == 1 {
							remote = gin.SignalInc(2) // another SCEndpoint
						}
						if err := x.Put(e.comms[0].World(), 1, dst[0], l.offs[k], src[0], l.offs[k], l.sizes[k], remote, gin.LocalNone); err != nil {
							return fmt.Errorf("put %d: %w", k, err)
						}
					}
					if err := x.Signal(e.comms[0].World(), 1, gin.SignalInc(1)); err != nil {
						return fmt.Errorf("signal after round %d: %w", round, err)
					}
				}
				return x.Flush(e.ctx)
			}
			for round := range rounds {
				if _, err := x.WaitSignal(e.ctx, 1, uint64(round+1), 64); err != nil {
					return err
				}
				for i := range per {
					k := round*per + i
					if err := checkFill(l.region(dst[1].Bytes(), k), uint64(k)+1000); err != nil {
						return fmt.Errorf("round %d signalled, but put %d (%d bytes, signal %v) is not there: %w",
							round, k, l.sizes[k], i%2 == 1, err)
					}
				}
			}
			return nil
		})
	})

	// Ring variant: one region rewritten round after round; the peer
	// acknowledges each round, and the data it sees is exactly the round the
	// signal names (never an older or a torn one).
	t.Run("RingWithAcks", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 4})
		rounds := scale(200, 40)
		const size = 4093
		src, dst := e.windows(2*size, 0), e.windows(2*size, 0)
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for round := range rounds {
					if round > 0 { // the peer has read round-1, and our source is free
						if _, err := x.WaitSignal(e.ctx, 3, uint64(round), 64); err != nil {
							return err
						}
						if err := x.Flush(e.ctx); err != nil {
							return err
						}
					}
					fill(src[0].Bytes()[3:3+size], uint64(round))
					if err := x.Put(e.comms[0].World(), 1, dst[0], 5, src[0], 3, size, gin.SignalInc(0), gin.LocalNone); err != nil {
						return err
					}
				}
				return nil
			}
			for round := range rounds {
				if _, err := x.WaitSignal(e.ctx, 0, uint64(round+1), 64); err != nil {
					return err
				}
				if err := checkFill(dst[1].Bytes()[5:5+size], uint64(round)); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if err := x.Signal(e.comms[1].World(), 0, gin.SignalInc(3)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
