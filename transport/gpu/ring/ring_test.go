package ring

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWQERoundTrip(t *testing.T) {
	cases := map[string]WQE{
		"put": {Seq: 7, Op: OpPut, Remote: RemoteInc, CounterInc: true, Peer: 3, Signal: 9, DstWindow: 1, SrcWindow: 2,
			Counter: 5, DstOff: 1 << 40, SrcOff: 12345, Bytes: 1 << 30, SignalValue: 1},
		"putValue": {Seq: 1<<32 + 5, Op: OpPutValue, Remote: RemoteAdd, ValueSize: 8, Peer: 1, DstWindow: 4,
			Bytes: 0xdeadbeefcafebabe, SignalValue: 1 << 63},
		"signal": {Seq: 0, Op: OpSignal, Remote: RemoteInc, Signal: 63, SignalValue: 1},
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			b := make([]byte, WQEBytes)
			w.Encode(b)
			got, err := Decode(b, w.Seq)
			require.NoError(t, err)
			assert.Equal(t, w, got)
			_, err = Decode(b, w.Seq+1)
			var torn *TornError
			require.ErrorAs(t, err, &torn, "a tag of another sequence is torn")
			assert.Equal(t, w.Seq+1, torn.Seq)
		})
	}
}

// TestLayout pins the byte positions the device writes (impl/gin__proxy.cuh
// packs w[0] = tag | op<<32 | remote<<40 | local<<48 | valueSize<<56, ...).
func TestLayout(t *testing.T) {
	w := WQE{Seq: 0x11223343, Op: OpPutValue, Remote: RemoteAdd, CounterInc: true, ValueSize: 4, Peer: 0x55,
		Signal: 0x66, DstWindow: 0x77, SrcWindow: 0x88, Counter: 0x99, DstOff: 0xaa, SrcOff: 0xbb, Bytes: 0xcc, SignalValue: 0xdd}
	b := make([]byte, WQEBytes)
	w.Encode(b)
	want := map[int]byte{0: 0x44, 1: 0x33, 2: 0x22, 3: 0x11, 4: 2, 5: 2, 6: 1, 7: 4, 8: 0x55, 12: 0x66, 16: 0x77,
		20: 0x88, 24: 0x99, 32: 0xaa, 40: 0xbb, 48: 0xcc, 56: 0xdd}
	for off, v := range want {
		assert.Equal(t, v, b[off], "byte %d", off)
	}
}

// ring makes the device and host parts of a ring in Go memory.
func newRing(t *testing.T, depth int) (dev, host []byte) {
	t.Helper()
	d := make([]uint64, DevBytes/8)
	h := make([]uint64, HostBytes(depth)/8)
	return u64bytes(d), u64bytes(h)
}

// TestModel runs the device algorithm (Producer) from many goroutines
// against one Reader, with a ring much shallower than the traffic: every
// WQE arrives exactly once, in sequence order, each producer's in its
// program order, and flush returns only once its WQEs were completed.
func TestModel(t *testing.T) {
	const producers, posts, depth = 8, 2000, 8
	dev, host := newRing(t, depth)
	var abort atomic.Uint64
	p, err := NewProducer(dev, host, depth, &abort)
	require.NoError(t, err)
	r, err := NewReader(host, depth)
	require.NoError(t, err)

	var completed atomic.Uint64 // what the consumer has completed, mirrored
	done := make(chan struct{})
	got := make([]WQE, 0, producers*posts)
	var readErr error
	go func() {
		defer close(done)
		defer func() {
			if len(got) < producers*posts {
				abort.Store(1) // the consumer gave up: so do the producers, not spin on
			}
		}()
		buf := make([]WQE, 5)
		deadline := time.Now().Add(30 * time.Second)
		for len(got) < producers*posts && time.Now().Before(deadline) {
			ws, err := r.Poll(buf)
			if err != nil {
				readErr = err
				return
			}
			got = append(got, ws...)
			r.Release()
			r.Complete(r.Next())
			completed.Store(r.Next())
		}
	}()
	var wg sync.WaitGroup
	flushErrs := make([]error, producers)
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < posts; {
				// Odd producers post like warps: batches of up to 5.
				batch := 1
				if g%2 == 1 {
					batch = min(1+i%5, posts-i)
				}
				ws := make([]WQE, batch)
				for k := range ws {
					ws[k] = WQE{Op: OpPut, Peer: uint32(g), Bytes: uint64(i + k)}
				}
				upTo, err := p.PostN(ws)
				if err != nil {
					flushErrs[g] = err
					return
				}
				i += batch
				if i%97 == 0 {
					if err := p.Flush(upTo); err != nil {
						flushErrs[g] = err
						return
					}
					if c := completed.Load(); c < upTo {
						// The mirror lags the ring's word by at most one store;
						// the ring's word itself must have reached upTo.
						if r.completed.Load() < upTo {
							flushErrs[g] = assert.AnError
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	<-done
	require.NoError(t, readErr)
	require.Zero(t, abort.Load(), "the consumer gave up after 30 s with %d of %d entries", len(got), producers*posts)
	for g, err := range flushErrs {
		require.NoError(t, err, "producer %d", g)
	}
	require.Len(t, got, producers*posts)
	next := make([]uint64, producers)
	for i, w := range got {
		require.Equal(t, uint64(i), w.Seq, "entry %d out of sequence", i)
		require.Equal(t, next[w.Peer], w.Bytes, "producer %d's posts out of order", w.Peer)
		next[w.Peer]++
	}
}

// A producer waiting for room gives up when abort is set.
func TestProducerAbort(t *testing.T) {
	const depth = 2
	dev, host := newRing(t, depth)
	var abort atomic.Uint64
	p, err := NewProducer(dev, host, depth, &abort)
	require.NoError(t, err)
	for range depth {
		_, err := p.Post(WQE{Op: OpSignal})
		require.NoError(t, err)
	}
	res := make(chan error, 1)
	go func() { _, err := p.Post(WQE{Op: OpSignal}); res <- err }()
	select {
	case err := <-res:
		t.Fatalf("post into a full ring returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	abort.Store(1)
	select {
	case err := <-res:
		require.ErrorIs(t, err, ErrAborted)
	case <-time.After(5 * time.Second):
		t.Fatal("abort did not end the wait")
	}
}

func TestReaderRejects(t *testing.T) {
	_, err := NewReader(make([]byte, HostBytes(8)), 6)
	assert.Error(t, err, "depth not a power of two")
	_, err = NewReader(make([]byte, HostBytes(8)-1), 8)
	assert.Error(t, err, "short host part")
	// A doorbell above what was written is a torn entry, not garbage.
	_, host := newRing(t, 4)
	r, err := NewReader(host, 4)
	require.NoError(t, err)
	r.doorbell.Store(1)
	_, err = r.Poll(make([]WQE, 4))
	var torn *TornError
	assert.ErrorAs(t, err, &torn)
}
