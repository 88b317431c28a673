package gin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/collective"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/launch"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma/shm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() { testutils.Role("shrink", roleShrink) }

// shrinkConfig has signals for one world barrier and one collective.Comm
// on up to n ranks, then one for puts (ringSignal); survivors reuse it
// for their smaller Comm.
func shrinkConfig(n int) gin.Config {
	return gin.Config{Signals: barrier.Requirement(n, 1) + collective.Requirement(n) + 1, PeerFailure: gin.FailPeer}
}

func ringSignal(n int) gin.Signal {
	return gin.Signal(barrier.Requirement(n, 1) + collective.Requirement(n))
}

// waitLost waits (bounded by ctx) until c knows rank dead is lost.
func waitLost(ctx context.Context, c *gin.Comm, dead int) error {
	for c.PeerErr(dead) == nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("rank %d never learned that rank %d is lost: %w", c.Rank(), dead, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// survive is a survivor's part once rank dead of the old Comm is lost:
// Shrink, then on the new Comm a put with a signal around the ring, a
// barrier and an all-reduce, each checked; the old Comm still reaches
// survivors and refuses the dead rank. It closes the new Comm, not old.
func survive(ctx context.Context, old *gin.Comm, dead int) error {
	n := old.Size()
	nc, err := old.Shrink(ctx)
	if err != nil {
		return fmt.Errorf("rank %d: shrink: %w", old.Rank(), err)
	}
	defer nc.Close()
	want := slices.DeleteFunc(seqInts(n), func(r int) bool { return r == dead })
	if got := nc.ParentRanks(); !slices.Equal(got, want) {
		return fmt.Errorf("rank %d: parent ranks %v, want %v", old.Rank(), got, want)
	}
	me, m := nc.Rank(), nc.Size()
	if m != n-1 || want[me] != old.Rank() {
		return fmt.Errorf("old rank %d: new rank %d of %d, want %d of %d", old.Rank(), me, m, slices.Index(want, old.Rank()), n-1)
	}

	// Puts and signals: each rank writes its old rank to its right
	// neighbour's window and waits for its left one's.
	win, err := nc.RegisterWindow(ctx, 64, 0)
	if err != nil {
		return err
	}
	x, err := nc.Context(0)
	if err != nil {
		return err
	}
	if err := x.PutValue(nc.World(), (me+1)%m, win, 0, uint64(old.Rank()+100), 8, gin.SignalInc(ringSignal(n))); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if _, err := x.WaitSignal(ctx, ringSignal(n), 1, 64); err != nil {
		return fmt.Errorf("wait for the left neighbour's put: %w", err)
	}
	left := want[(me+m-1)%m]
	if v, _ := collective.Elements[uint64](win, 0, 1); v[0] != uint64(left+100) {
		return fmt.Errorf("rank %d: got %d from the left, want %d", me, v[0], left+100)
	}

	// The one-sided barrier of package barrier.
	b, err := barrier.NewWorldSession(x, 0, 0)
	if err != nil {
		return err
	}
	if err := b.Sync(ctx, barrier.FencePut); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}

	// An all-reduce of package collective: element i is the sum over the
	// survivors of old rank*1000+i.
	const count = 1000
	coll, err := collective.New(ctx, nc, collective.Config{Signal0: gin.Signal(barrier.Requirement(n, 1))})
	if err != nil {
		return err
	}
	data, err := nc.RegisterWindow(ctx, 2*8*count, 0)
	if err != nil {
		return err
	}
	src, _ := collective.Elements[int64](data, 0, count)
	for i := range src {
		src[i] = int64(old.Rank()*1000 + i)
	}
	if err := coll.AllReduce(ctx, collective.At(data, 8*count), collective.At(data, 0), count, collective.Int64, collective.Sum); err != nil {
		return fmt.Errorf("all-reduce: %w", err)
	}
	dst, _ := collective.Elements[int64](data, 8*count, count)
	var ranks int64
	for _, r := range want {
		ranks += int64(r)
	}
	for i, v := range dst {
		if w := ranks*1000 + int64(m*i); v != w {
			return fmt.Errorf("rank %d: all-reduce element %d = %d, want %d", me, i, v, w)
		}
	}
	if err := coll.Close(ctx); err != nil {
		return err
	}
	if err := nc.Barrier(ctx); err != nil {
		return fmt.Errorf("control-plane barrier of the new comm: %w", err)
	}

	// The old Comm (FailPeer) still posts to survivors, not to the dead rank.
	ox, _ := old.Context(0)
	peer := want[(me+1)%m]
	owin, err := oldWindow(old)
	if err != nil {
		return err
	}
	if err := ox.PutValue(old.World(), peer, owin, 0, 7, 8, gin.None); err != nil {
		return fmt.Errorf("old comm: put to survivor %d: %w", peer, err)
	}
	if err := ox.PutValue(old.World(), dead, owin, 0, 7, 8, gin.None); !errors.Is(err, gin.ErrPeerLost) {
		return fmt.Errorf("old comm: put to the dead rank: %v, want ErrPeerLost", err)
	}
	return ox.Flush(ctx)
}

// oldWindows holds the window each old Comm registered before the loss.
var oldWindows = map[*gin.Comm]*gin.Window{}

func oldWindow(c *gin.Comm) (*gin.Window, error) {
	if w := oldWindows[c]; w != nil {
		return w, nil
	}
	return nil, fmt.Errorf("rank %d: no window registered before the loss", c.Rank())
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// Four goroutine ranks; rank 2 is lost (bootstrap.KillLocal, as a crash);
// the three survivors shrink and run puts, a barrier and an all-reduce on
// the new Comm.
func TestShrinkLocal(t *testing.T) {
	const n, dead = 4, 2
	ctx, stop := context.WithCancel(testutils.Deadline(t, time.Minute))
	defer stop()
	boots := bootstrap.NewLocal(fmt.Sprintf("shrink%d", os.Getpid()), n)
	comms := make([]*gin.Comm, n)
	wins := make([]*gin.Window, n)
	for r, err := range testutils.GoRanks(n, stop, func(r int) (err error) {
		if comms[r], err = gin.NewComm(ctx, boots[r], shrinkConfig(n)); err != nil {
			return err
		}
		wins[r], err = comms[r].RegisterWindow(ctx, 64, 0)
		return err
	}) {
		require.NoError(t, err, "rank %d", r)
	}
	for r, c := range comms {
		oldWindows[c] = wins[r]
		defer c.Close()
	}

	bootstrap.KillLocal(boots[dead])
	require.NoError(t, comms[dead].Close())
	for r, err := range testutils.GoRanks(n, stop, func(r int) error {
		if r == dead {
			return nil
		}
		if err := waitLost(ctx, comms[r], dead); err != nil {
			return err
		}
		return survive(ctx, comms[r], dead)
	}) {
		assert.NoError(t, err, "rank %d", r)
	}
}

// A second loss after the first shrink: the shrunk Comm learns it (its
// bootstrap relays the world's notice) and shrinks again; the killed
// rank's own Shrink fails.
func TestShrinkTwice(t *testing.T) {
	const n = 4
	ctx, stop := context.WithCancel(testutils.Deadline(t, time.Minute))
	defer stop()
	boots := bootstrap.NewLocal(fmt.Sprintf("shrink2x%d", os.Getpid()), n)
	comms := make([]*gin.Comm, n)
	for r, err := range testutils.GoRanks(n, stop, func(r int) (err error) {
		comms[r], err = gin.NewComm(ctx, boots[r], gin.Config{Signals: 4, PeerFailure: gin.FailPeer})
		return err
	}) {
		require.NoError(t, err, "rank %d", r)
	}
	for _, c := range comms {
		defer c.Close()
	}
	bootstrap.KillLocal(boots[3])
	second := make([]*gin.Comm, n)
	for r, err := range testutils.GoRanks(n-1, stop, func(r int) (err error) {
		if err := waitLost(ctx, comms[r], 3); err != nil {
			return err
		}
		s, err := comms[r].Shrink(ctx)
		if err != nil {
			return err
		}
		defer s.Close()
		if r == 1 {
			bootstrap.KillLocal(boots[1])
			return nil
		}
		if err := waitLost(ctx, s, 1); err != nil {
			return err
		}
		second[r], err = s.Shrink(ctx)
		if err != nil {
			return err
		}
		if got := second[r].ParentRanks(); !slices.Equal(got, []int{0, 2}) {
			return fmt.Errorf("rank %d: parent ranks %v, want [0 2]", r, got)
		}
		return second[r].Barrier(ctx)
	}) {
		assert.NoError(t, err, "rank %d", r)
	}
	for _, c := range second {
		if c != nil {
			c.Close()
		}
	}
	_, err := comms[3].Shrink(ctx)
	assert.Error(t, err, "the killed rank")
}

// envShrinkDead names the rank roleShrink kills.
const envShrinkDead = "RDMACTOR_TEST_SHRINK_DEAD"

// roleShrink: the multi-process run of TestShrinkLocal: rank dead
// (envShrinkDead) is killed (SIGKILL) once the windows exist, the others
// shrink; when the dead rank is 0, whose process hosts the control
// plane's coordinator, Shrink must fail with ErrRankZeroLost instead.
func roleShrink() error {
	dead, err := strconv.Atoi(os.Getenv(envShrinkDead))
	if err != nil {
		return fmt.Errorf("%s: %w", envShrinkDead, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := gin.SizeFromEnv()
	if err != nil {
		return err
	}
	c, err := gin.Init(ctx, shrinkConfig(n))
	if err != nil {
		return err
	}
	win, err := c.RegisterWindow(ctx, 64, 0)
	if err != nil {
		return err
	}
	oldWindows[c] = win
	// Rank 0 may die before its coordinator has sent the barrier's end.
	if err := c.Barrier(ctx); err != nil && !(dead == 0 && errors.Is(err, gin.ErrPeerLost)) {
		return err
	}
	if c.Rank() == dead {
		syscall.Kill(os.Getpid(), syscall.SIGKILL) // kill -9: no Close, no goodbye
		select {}
	}
	if err := waitLost(ctx, c, dead); err != nil {
		return err
	}
	if dead == 0 {
		_, err := c.Shrink(ctx)
		if !errors.Is(err, gin.ErrRankZeroLost) {
			return fmt.Errorf("shrink without rank 0: %v, want ErrRankZeroLost", err)
		}
		return nil // the control plane is gone: Close would only wait
	}
	if err := survive(ctx, c, dead); err != nil {
		return err
	}
	fmt.Printf("rank %d: shrunk to %d ranks, all-reduce checked\n", c.Rank(), n-1)
	return c.Close()
}

func TestShrinkProcesses(t *testing.T) {
	for _, dead := range []int{2, 0} {
		t.Run("rank"+strconv.Itoa(dead), func(t *testing.T) {
			res := testutils.RunRanksOpts(t, launch.Options{NP: 4, Cleanup: shm.Cleanup, Timeout: 90 * time.Second,
				Env: []string{envShrinkDead + "=" + strconv.Itoa(dead)}}, "shrink")
			require.Len(t, res, 4)
			for _, r := range res {
				if r.Rank == dead {
					assert.NotEqual(t, 0, r.ExitCode, "rank %d was killed", r.Rank)
				} else {
					assert.Equal(t, 0, r.ExitCode, "rank %d: %v", r.Rank, r.Err)
				}
			}
		})
	}
}
