//go:build ofi && cgo && linux

package hybrid_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/hybrid"
	"github.com/rdmactor/rdmactor/transport/rdma/ofi"
	_ "github.com/rdmactor/rdmactor/transport/rdma/std" // gin.Init's bootstrap
)

// Ranks in these tests are real processes started through the launcher:
// the test binary re-executed with RDMACTOR_TEST_ROLE naming what to run.
func TestMain(m *testing.M) {
	testutils.Role("hosts", roleHosts)
	testutils.Role("killed", roleKilled)
	testutils.MainWithRoles(m)
}

// initOnHost joins the job as a rank of host A (ranks 0, 1) or B (2, 3),
// by RDMACTOR_HOST_ID, as two machines would tell them apart.
func initOnHost(ctx context.Context, cfg gin.Config) (*gin.Comm, error) {
	r, err := strconv.Atoi(os.Getenv(gin.EnvRank))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gin.EnvRank, err)
	}
	host := "A"
	if r >= 2 {
		host = "B"
	}
	os.Setenv(gin.EnvHostID, host)
	return gin.Init(ctx, cfg)
}

// roleHosts: 4 processes on hosts A, A, B, B. Teams follow the hosts;
// every rank puts a block and its rank, with a signal, to every rank
// (itself included: shm to its host, ofi to the other), and checks all
// four arrived.
func roleHosts() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := initOnHost(ctx, gin.Config{Signals: 1})
	if err != nil {
		return err
	}
	defer c.Close()
	me, n := c.Rank(), c.Size()
	switch {
	case c.Transport() != hybrid.Name:
		return fmt.Errorf("transport %q, want %q", c.Transport(), hybrid.Name)
	case c.LocalRanks() != 2:
		return fmt.Errorf("%d local ranks, want 2", c.LocalRanks())
	case c.LSA() != gin.Team{Rank: me % 2, NRanks: 2, Stride: 1}:
		return fmt.Errorf("LSA %+v", c.LSA())
	case c.Rail() != gin.Team{Rank: me / 2, NRanks: 2, Stride: 2}:
		return fmt.Errorf("Rail %+v", c.Rail())
	}
	const block = 1 << 16
	win, err := c.RegisterWindow(ctx, (n+1)*block, 0)
	if err != nil {
		return err
	}
	src := win.Bytes()[n*block:]
	for i := range src {
		src[i] = byte(me*31 + i)
	}
	binary.LittleEndian.PutUint64(src, uint64(me))
	x, _ := c.Context(0)
	for p := range n {
		if err := x.Put(c.World(), p, win, me*block, win, n*block, block, gin.SignalInc(0), gin.LocalNone); err != nil {
			return fmt.Errorf("put to rank %d: %w", p, err)
		}
	}
	if _, err := x.WaitSignal(ctx, 0, uint64(n), 64); err != nil {
		return err
	}
	for p := range n {
		got := win.Bytes()[p*block : (p+1)*block]
		if v := binary.LittleEndian.Uint64(got); v != uint64(p) {
			return fmt.Errorf("block from rank %d names rank %d", p, v)
		}
		for i := 8; i < block; i++ {
			if got[i] != byte(p*31+i) {
				return fmt.Errorf("block from rank %d: byte %d is wrong", p, i)
			}
		}
	}
	if err := x.Flush(ctx); err != nil {
		return err
	}
	return c.Barrier(ctx)
}

// roleKilled: rank 3 (host B) dies once the windows exist; the others,
// one beside it on B and two on A, wait for a signal nobody sends and
// must be told of the loss long before their deadline.
func roleKilled() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := initOnHost(ctx, gin.Config{Signals: 1})
	if err != nil {
		return err
	}
	if _, err := c.RegisterWindow(ctx, 4096, 0); err != nil {
		return err
	}
	if err := c.Barrier(ctx); err != nil {
		return err
	}
	if c.Rank() == 3 {
		os.Exit(3) // no Close, no goodbye: as if killed
	}
	x, _ := c.Context(0)
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	start := time.Now()
	_, err = x.WaitSignal(wctx, 0, 1, 64)
	if !errors.Is(err, gin.ErrPeerLost) || time.Since(start) > 10*time.Second {
		return fmt.Errorf("wait ended with %v after %v, want ErrPeerLost within 10 s", err, time.Since(start))
	}
	return c.Close()
}

func runHosts(t *testing.T, role string) []launch.Result {
	useTCP(t)
	return testutils.RunRanksOpts(t, launch.Options{NP: 4, Transport: hybrid.Name, KillOnFailure: role != "killed",
		Env: []string{ofi.EnvProvider + "=tcp", ofi.EnvIface + "=lo"}}, role)
}

// Four processes on two hosts: shm within each, ofi between.
func TestProcessesOnTwoHosts(t *testing.T) {
	for _, r := range runHosts(t, "hosts") {
		if r.ExitCode != 0 {
			t.Errorf("rank %d: exit code %d: %v", r.Rank, r.ExitCode, r.Err)
		}
	}
}

// A rank killed on one host: every other rank, on either host, learns of
// the loss.
func TestRankKilledOnOneHost(t *testing.T) {
	for _, r := range runHosts(t, "killed") {
		want := 0
		if r.Rank == 3 {
			want = 3
		}
		if r.ExitCode != want {
			t.Errorf("rank %d: exit code %d, want %d: %v", r.Rank, r.ExitCode, want, r.Err)
		}
	}
}
