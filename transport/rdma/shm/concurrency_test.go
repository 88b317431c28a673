package shm

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// TestSignalImpliesData: a writer puts write k into ring slot k%slots with
// SignalInc; a reader waits with atomic loads and checks that whenever the
// signal reads s, slot (s-1)%slots holds write s-1 (strong signal). Credits
// (acked) keep the writer from overwriting a slot not yet checked.
//
// The reader reads through its own mapping, the writer writes through its
// import: different addresses, so the race detector neither misses nor
// invents an edge between them; what is checked is the hardware ordering.
func TestSignalImpliesData(t *testing.T) {
	const (
		n       = 10_000
		slots   = 64
		slotLen = 64
		base    = 64 // slot 0 offset; the signal and mode words sit below
	)
	pr := newPair(t, slotLen, base+slots*slotLen)
	var acked atomic.Uint64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		src := pr.src.Bytes()
		wqe := []rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, Len: slotLen,
			Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: sigOff, ModeOff: modeOff}}}
		for k := uint64(0); k < n; k++ {
			for k-acked.Load() >= slots {
				runtime.Gosched()
			}
			for i := 0; i < slotLen; i += 8 {
				binary.NativeEndian.PutUint64(src[i:], k)
			}
			wqe[0].WrID = k
			wqe[0].RemoteOff = base + int(k%slots)*slotLen
			if err := pr.qp.Post(wqe); err != nil {
				assert.NoError(t, err)
				return
			}
		}
	}()

	dst := pr.dst.Bytes()
	sig := Word(dst, sigOff)
	var bad error
	for k := uint64(1); k <= n && bad == nil; {
		s := sig.Load()
		if s < k {
			runtime.Gosched()
			continue
		}
		if s > n {
			bad = errors.New("signal past the number of writes")
			break
		}
		// Every write below s is visible; check those not yet checked.
		for ; k <= s; k++ {
			slot := dst[base+int((k-1)%slots)*slotLen:][:slotLen]
			for i := 0; i < slotLen; i += 8 {
				if got := binary.NativeEndian.Uint64(slot[i:]); got != k-1 {
					bad = errors.New("stale slot")
					t.Errorf("signal %d: slot of write %d holds %d at byte %d", s, k-1, got, i)
					break
				}
			}
			acked.Store(k)
		}
	}
	wg.Wait()
	require.NoError(t, bad)
	assert.Equal(t, uint64(n), sig.Load())
	assert.Len(t, pr.done, n)
}

// TestCloseDuringPost closes an import and a source while another goroutine
// posts on them: every Post either succeeds or fails with rdma.ErrClosed,
// and none touches unmapped memory.
func TestCloseDuringPost(t *testing.T) {
	for _, target := range []string{"import", "local", "provider"} {
		t.Run(target, func(t *testing.T) {
			pr := newPair(t, 1<<16, 1<<16+64)
			wqe := []rdma.WQE{{Op: rdma.OpWrite, Local: pr.src, Remote: pr.imp, RemoteOff: 64, Len: 1 << 16,
				Signal: rdma.Signal{Mode: rdma.SignalInc, Region: pr.imp, Off: 0, ModeOff: 8}}}
			started := make(chan struct{})
			var okCount int
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if i == 10 {
						close(started)
					}
					err := pr.qp.Post(wqe)
					if err != nil {
						assert.ErrorIs(t, err, rdma.ErrClosed)
						if i < 10 {
							close(started)
						}
						return
					}
					okCount++
				}
			}()
			<-started
			switch target {
			case "import":
				require.NoError(t, pr.imp.Close())
			case "local":
				require.NoError(t, pr.src.Close())
			case "provider":
				require.NoError(t, pr.p0.Close())
			}
			wg.Wait()
			assert.GreaterOrEqual(t, okCount, 10)
		})
	}
}
