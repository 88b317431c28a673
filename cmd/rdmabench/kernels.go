package main

import (
	"fmt"
	"time"

	"github.com/rdmactor/rdmactor/gin"
)

// putsigPingPong is putsig_lat: rank 0 puts size bytes into rank 1's
// receive area with SignalInc(sigLat) and waits for its own sigLat; rank 1
// waits for its sigLat and answers the same way. One iteration is a round
// trip; the one-way latency is half of it.
//
// There is no Flush in the loop: the source never changes, and a signal
// seen at the peer already implies the data (strong signals).
func (r *rank) putsigPingPong(size int) kernel {
	recvOff := len(r.lat.Bytes()) / 2
	inc := gin.SignalInc(sigLat)
	return r.pingPong(func() error {
		if err := r.x.Put(r.team, r.peer, r.lat, recvOff, r.lat, 0, size, inc, gin.LocalNone); err != nil {
			return fmt.Errorf("put: %w", err)
		}
		return nil
	}, func() error {
		r.latSeen++
		_, err := r.x.WaitSignal(r.ctx, sigLat, r.latSeen, 64)
		return err
	})
}

// pingPong is the loop of a round-trip kernel: rank 0 sends then waits,
// recording a sample per round trip; rank 1 waits then answers.
func (r *rank) pingPong(send, wait func() error) kernel {
	return func(n int, samples []int64) error {
		var last time.Time
		if samples != nil {
			last = time.Now()
		}
		for i := range n {
			if r.me == 0 {
				if err := send(); err != nil {
					return err
				}
				if err := wait(); err != nil {
					return err
				}
				if samples != nil {
					now := time.Now()
					samples[i], last = int64(now.Sub(last)), now
				}
			} else {
				if err := wait(); err != nil {
					return err
				}
				if err := send(); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// putStream is put_bw: rank 0 puts n blocks of size bytes from the start of
// its bandwidth window into alternate halves of rank 1's, each with
// SignalInc(sigBW), then flushes; rank 1 waits for the n-th signal.
func (r *rank) putStream(size int) kernel {
	half := r.bw.Size() / 2
	inc := gin.SignalInc(sigBW)
	return func(n int, _ []int64) error {
		if r.me == 0 {
			for i := range n {
				if err := r.x.Put(r.team, r.peer, r.bw, (i&1)*half, r.bw, 0, size, inc, gin.LocalNone); err != nil {
					return fmt.Errorf("put: %w", err)
				}
			}
			return r.x.Flush(r.ctx)
		}
		r.bwSeen += uint64(n)
		_, err := r.x.WaitSignal(r.ctx, sigBW, r.bwSeen, 64)
		return err
	}
}

// copyKernel is copy_bw: a single-core Go copy between two private buffers
// of size bytes, touched first so no page faults are timed (bench/mpi/rmabench.c's
// memcpy figure, which rank 0 measures alone). Only rank 0 allocates
// (alloc false elsewhere).
func copyKernel(size int, alloc bool) kernel {
	if !alloc {
		return nil
	}
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i], dst[i] = byte(i), 1
	}
	return func(n int, _ []int64) error {
		for range n {
			copy(dst, src)
		}
		return nil
	}
}
