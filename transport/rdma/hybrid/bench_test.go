//go:build ofi && cgo && linux

package hybrid_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/testutils/ginlocal"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
)

// BenchmarkPingPongHosts is an 8 B put+signal ping-pong between two
// goroutine ranks on two hosts (gin.NewLocalOnHosts: distinct host ids,
// so "auto" joins them through ofi), against the same ping-pong on the
// plain ofi provider; ns/op is one round trip. ofi is libfabric's tcp
// provider over loopback.
func BenchmarkPingPongHosts(b *testing.B) {
	useTCP(b)
	for _, tr := range []string{hybrid.Name, ofi.Name} {
		b.Run("transport="+tr, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			comms, err := gin.NewLocalOnHosts(ctx, []string{"A", "B"}, gin.Config{Transport: tr, Signals: 2})
			if err != nil {
				b.Skipf("%s: %v", tr, err)
			}
			defer func() {
				for _, c := range comms {
					c.Close()
				}
			}()
			wins := ginlocal.Windows(b, ctx, comms, 4096)
			var errs [2]error
			var wg sync.WaitGroup
			n := b.N
			b.ResetTimer()
			for r := range 2 {
				wg.Go(func() {
					x, err := comms[r].Context(0)
					if err != nil {
						errs[r] = err
						return
					}
					team, peer := comms[r].World(), 1-r
					for k := 1; k <= n; k++ {
						if r == 1 {
							if _, err := x.WaitSignal(ctx, gin.Signal(r), uint64(k), 64); err != nil {
								errs[r] = err
								return
							}
						}
						if err := x.Put(team, peer, wins[r], 0, wins[r], 8, 8, gin.SignalInc(gin.Signal(peer)), gin.LocalNone); err != nil {
							errs[r] = err
							return
						}
						if r == 0 {
							if _, err := x.WaitSignal(ctx, gin.Signal(r), uint64(k), 64); err != nil {
								errs[r] = err
								return
							}
						}
					}
				})
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
