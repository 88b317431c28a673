package conformance

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rdmactor/rdmactor/gin"
)

func testPutValue(t *testing.T, f Factory) {
	// gin/put.go, PutValue: "writes the low size bytes (1, 2, 4 or 8) of
	// value, little-endian ... The value is staged in the posting
	// endpoint's slot pool, so nothing of the caller's is referenced after
	// return." With an 8-entry SQ the slots are reused all the time; none
	// may be reused before its put was executed (NCCL gin.h
	// ncclGin::putValue; the PutValue slot pool of the aws-ofi-nccl EFA-GDA
	// backend).
	t.Run("SlotReuse", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, SQDepth: 8})
		n := scale(100000, 10000)
		win := e.windows(8*n, 0)
		value := func(k int) uint64 { return uint64(k)*0x9E3779B97F4A7C15 ^ 0xA5A5A5A5A5A5A5A5 }
		sizes := []int{1, 2, 4, 8}
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for k := range n {
					if err := x.PutValue(e.comms[0].World(), 1, win[0], 8*k, value(k), sizes[k%4], gin.SignalInc(0)); err != nil {
						return fmt.Errorf("put value %d: %w", k, err)
					}
				}
				return x.Flush(e.ctx)
			}
			v, err := x.WaitSignal(e.ctx, 0, uint64(n), 64)
			if err != nil {
				return err
			}
			if v != uint64(n) {
				return fmt.Errorf("signal %d after %d put values", v, n)
			}
			b := win[1].Bytes()
			for k := range n {
				var want [8]byte
				binary.LittleEndian.PutUint64(want[:], value(k))
				clear(want[sizes[k%4]:])
				if got := b[8*k : 8*k+8]; string(got) != string(want[:]) {
					return fmt.Errorf("slot %d (size %d): got % x, want % x", k, sizes[k%4], got, want)
				}
			}
			return nil
		})
	})

	// Value/signal ordering on one word: rank 0 writes k with a signal,
	// rank 1 waits for signal k and must read exactly k, then lets rank 0
	// go on (a value is never overtaken by a later one, nor by its signal).
	t.Run("SameOffset", func(t *testing.T) {
		e := setup(t, f, 2, gin.Config{Signals: 2, SQDepth: 8})
		rounds := scale(2000, 1000)
		win := e.windows(64, 0)
		e.ranks(func(r int) error {
			x := e.x(r, 0)
			if r == 0 {
				for k := 1; k <= rounds; k++ {
					if err := x.PutValue(e.comms[0].World(), 1, win[0], 16, uint64(k)<<8|uint64(k&0xFF), 8, gin.SignalInc(0)); err != nil {
						return err
					}
					if _, err := x.WaitSignal(e.ctx, 1, uint64(k), 64); err != nil {
						return fmt.Errorf("ack %d: %w", k, err)
					}
				}
				return nil
			}
			for k := 1; k <= rounds; k++ {
				if _, err := x.WaitSignal(e.ctx, 0, uint64(k), 64); err != nil {
					return err
				}
				if got, want := binary.LittleEndian.Uint64(win[1].Bytes()[16:]), uint64(k)<<8|uint64(k&0xFF); got != want {
					return fmt.Errorf("after signal %d the value is %#x, want %#x", k, got, want)
				}
				if err := x.Signal(e.comms[1].World(), 0, gin.SignalInc(1)); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
