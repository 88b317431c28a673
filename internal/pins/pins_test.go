package pins_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmactor/rdmactor/internal/pins"
)

func TestPinThenClose(t *testing.T) {
	var p pins.Pins
	require.False(t, p.Closed())
	require.True(t, p.Pin())
	require.True(t, p.Pin())
	p.Unpin()

	closed := make(chan bool)
	go func() { closed <- p.Close() }()
	// Close began: later pins fail, but Close waits for the one held.
	require.Eventually(t, p.Closed, time.Second, time.Millisecond)
	assert.False(t, p.Pin())
	select {
	case <-closed:
		t.Fatal("Close returned while a pin was held")
	case <-time.After(20 * time.Millisecond):
	}
	p.Unpin()
	assert.True(t, <-closed)
	assert.False(t, p.Close(), "a second Close reports it was closed")
	assert.False(t, p.Pin())
}

// TestCloseUnderPins: no pin that succeeded is still held when Close
// returns, whatever the interleaving.
func TestCloseUnderPins(t *testing.T) {
	var p pins.Pins
	var held atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.Pin() {
				held.Add(1)
				held.Add(-1)
				p.Unpin()
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	require.True(t, p.Close())
	assert.Zero(t, held.Load())
	wg.Wait()
}

func TestWindowNilOnceClosing(t *testing.T) {
	var p pins.Pins
	mem := make([]byte, 16)
	w := p.Window(mem, 8)
	require.Len(t, w, 8)
	assert.Equal(t, 8, cap(w), "the window cannot be resliced past n")
	assert.Same(t, &mem[0], &w[0])
	require.True(t, p.Close())
	assert.Nil(t, p.Window(mem, 8))
}
