package gin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactor/rdmactor/barrier"
	"github.com/rdmactor/rdmactor/gin"
	"github.com/rdmactor/rdmactor/internal/bootstrap"
	"github.com/rdmactor/rdmactor/internal/testutils"
	"github.com/rdmactor/rdmactor/transport/rdma"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countPrefix names the counting providers: countPrefix+"shm" wraps shm,
// countPrefix+"ofi" wraps ofi (where the build has it). They count the
// Import and Connect calls gin makes, by (job, rank, peer), so the peer-set
// tests can prove that nothing was imported from, or connected to, a rank
// outside Config.Peers: on ofi an Import is the address-vector insert and
// the connection warm-up, on shm the mapping of the peer's file.
const countPrefix = "peercount+"

type peerCounts struct {
	mu       sync.Mutex
	imports  map[int]int
	connects map[int]int
}

var (
	countsMu sync.Mutex
	counts   = map[string]*peerCounts{} // by job "/" rank
)

func countsOf(job string, rank int) *peerCounts {
	countsMu.Lock()
	defer countsMu.Unlock()
	k := fmt.Sprintf("%s/%d", job, rank)
	if counts[k] == nil {
		counts[k] = &peerCounts{imports: map[int]int{}, connects: map[int]int{}}
	}
	return counts[k]
}

func (p *peerCounts) get(peer int) (imports, connects int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.imports[peer], p.connects[peer]
}

type countingProvider struct {
	rdma.Provider
	n *peerCounts
}

func (p *countingProvider) Import(peer int, desc []byte) (rdma.RemoteRegion, error) {
	p.n.mu.Lock()
	p.n.imports[peer]++
	p.n.mu.Unlock()
	return p.Provider.Import(peer, desc)
}

func (p *countingProvider) Connect(peer int, cq rdma.CompletionHandler) (rdma.QP, error) {
	p.n.mu.Lock()
	p.n.connects[peer]++
	p.n.mu.Unlock()
	return p.Provider.Connect(peer, cq)
}

// The wrappers keep the provider's optional interfaces (gin and the
// endpoints look for rdma.Poller and rdma.BlockingPoller).
type countingPoller struct {
	*countingProvider
	rdma.Poller
}

type countingBlocking struct {
	*countingProvider
	rdma.BlockingPoller
}

func init() {
	for _, inner := range []string{"shm", "ofi"} {
		rdma.Register(countPrefix+inner, func(cfg rdma.Config) (rdma.Provider, error) {
			p, err := rdma.Open(inner, cfg)
			if err != nil {
				return nil, err
			}
			c := &countingProvider{Provider: p, n: countsOf(cfg.Job, cfg.Rank)}
			switch q := p.(type) {
			case rdma.BlockingPoller:
				return countingBlocking{c, q}, nil
			case rdma.Poller:
				return countingPoller{c, q}, nil
			}
			return c, nil
		})
	}
	testutils.Role("peersring", rolePeersRing)
}

// ringPeers is rank me's neighbours in a ring of n.
func ringPeers(me, n int) []int { return []int{(me + n - 1) % n, (me + 1) % n} }

// peerRing is the peer-set check of one rank of a ring of 4 or more where
// each rank lists only its neighbours: puts with signals and a get to
// either neighbour work; every post to the rank across the ring fails at
// once with ErrNotPeer naming it, as does a team or barrier over the
// world; and nothing was imported from or connected to that rank. n
// counts this rank's provider calls.
func peerRing(ctx context.Context, c *gin.Comm, n *peerCounts) error {
	const blk = 512
	me, size := c.Rank(), c.Size()
	left, right, far := (me+size-1)%size, (me+1)%size, (me+2)%size
	if got, want := c.Peers(), slices.Sorted(slices.Values([]int{left, me, right})); !slices.Equal(got, want) {
		return fmt.Errorf("Peers() = %v, want %v", got, want)
	}
	if c.IsPeer(far) || !c.IsPeer(left) || !c.IsPeer(me) {
		return fmt.Errorf("IsPeer: far %d %v, left %v, me %v", far, c.IsPeer(far), c.IsPeer(left), c.IsPeer(me))
	}
	// Blocks: 0 this rank's data, 1 from the left, 2 from the right, 3 a get.
	win, err := c.RegisterWindow(ctx, 4*blk, 0)
	if err != nil {
		return err
	}
	x, _ := c.Context(0)
	out := win.Bytes()[:blk]
	for i := range out {
		out[i] = byte(me*31 + i)
	}
	w := c.World()
	if err := c.Barrier(ctx); err != nil { // every rank's block 0 is written
		return err
	}
	if err := x.Put(w, right, win, blk, win, 0, blk, gin.SignalInc(0), gin.LocalNone); err != nil {
		return fmt.Errorf("put to right neighbour %d: %w", right, err)
	}
	if err := x.Put(w, left, win, 2*blk, win, 0, blk, gin.SignalInc(1), gin.LocalNone); err != nil {
		return fmt.Errorf("put to left neighbour %d: %w", left, err)
	}
	if err := x.Signal(w, right, gin.SignalAdd(2, 5)); err != nil {
		return fmt.Errorf("signal to right neighbour %d: %w", right, err)
	}
	for s, least := range []uint64{1, 1, 5} {
		if _, err := x.WaitSignal(ctx, gin.Signal(s), least, 64); err != nil {
			return err
		}
	}
	for b, from := range map[int]int{1: left, 2: right} {
		for i, v := range win.Bytes()[b*blk : (b+1)*blk] {
			if v != byte(from*31+i) {
				return fmt.Errorf("block %d from rank %d: byte %d is %d", b, from, i, v)
			}
		}
	}
	if c.Capabilities().Get {
		if err := x.Get(w, left, win, 3*blk, win, 0, blk, gin.LocalNone); err != nil {
			return fmt.Errorf("get from left neighbour %d: %w", left, err)
		}
		if err := x.Flush(ctx); err != nil {
			return err
		}
		if !bytes.Equal(win.Bytes()[3*blk:], win.Bytes()[blk:2*blk]) {
			return fmt.Errorf("get from rank %d read other bytes than its put brought", left)
		}
	}

	// Every post to the rank across the ring fails at once, naming it.
	notPeer := func(what string, err error) error {
		if !errors.Is(err, gin.ErrNotPeer) || !strings.Contains(err.Error(), fmt.Sprintf("world rank %d ", far)) {
			return fmt.Errorf("%s to non-peer %d: %v, want ErrNotPeer naming it", what, far, err)
		}
		return nil
	}
	start := time.Now()
	errs := []error{
		notPeer("put", x.Put(w, far, win, 0, win, 0, 8, gin.SignalInc(0), gin.LocalNone)),
		notPeer("put value", x.PutValue(w, far, win, 0, 7, 8, gin.None)),
		notPeer("signal", x.Signal(w, far, gin.SignalInc(0))),
		notPeer("team", c.CheckTeam(w)),
	}
	if c.Capabilities().Get {
		errs = append(errs, notPeer("get", x.Get(w, far, win, 0, win, 0, 8, gin.LocalNone)))
	}
	_, err = barrier.NewWorldSession(x, 0, 0)
	errs = append(errs, notPeer("world barrier", err))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if took := time.Since(start); took > time.Second {
		return fmt.Errorf("failed posts to a non-peer took %v", took)
	}
	// A team of this rank and its right neighbour is fine.
	if err := c.CheckTeam(gin.Team{Rank: 0, NRanks: 2, Stride: right - me}); right > me && err != nil {
		return fmt.Errorf("team of neighbours: %w", err)
	}

	// Nothing of the far rank was imported or connected; both neighbours'
	// signal and data regions were imported.
	for _, r := range []int{left, right, me} {
		if imp, _ := n.get(r); imp != 2 {
			return fmt.Errorf("rank %d imported %d regions of rank %d, want 2 (signals, window)", me, imp, r)
		}
	}
	for _, r := range []int{left, right} {
		if _, con := n.get(r); con == 0 {
			return fmt.Errorf("rank %d never connected to neighbour %d", me, r)
		}
	}
	for r := range size {
		if r == left || r == right || r == me {
			continue
		}
		if imp, con := n.get(r); imp != 0 || con != 0 {
			return fmt.Errorf("rank %d imported %d regions of and opened %d QPs to non-peer %d", me, imp, con, r)
		}
	}
	return c.Barrier(ctx) // no rank closes while a neighbour still reads
}

// goRanks builds one Comm per cfgs entry, each a goroutine rank over an
// in-process bootstrap of job, and runs fn (if not nil) on each; it
// returns the errors of NewComm or fn by rank. Comms are closed at the end.
func goRanks(t *testing.T, job string, cfgs []gin.Config, fn func(ctx context.Context, c *gin.Comm) error) []error {
	t.Helper()
	ctx, cancel := context.WithCancel(testutils.Deadline(t, time.Minute))
	defer cancel()
	boots := bootstrap.NewLocal(job, len(cfgs))
	return testutils.GoRanks(len(cfgs), nil, func(r int) error {
		c, err := gin.NewComm(ctx, boots[r], cfgs[r])
		if err != nil {
			// Closing the bootstrap ends the others' collectives with a
			// loss; cancelling ctx could end theirs before they see the
			// exchange that failed this one.
			boots[r].Close()
			return err
		}
		defer c.Close()
		if fn == nil {
			return nil
		}
		if err := fn(ctx, c); err != nil {
			cancel() // the others stop waiting for this rank
			return err
		}
		return nil
	})
}

func peerJob(t *testing.T) string {
	return fmt.Sprintf("peers%d-%s", os.Getpid(), strings.NewReplacer("/", "-", "+", "-").Replace(t.Name()))
}

// runPeerRing runs peerRing on 4 goroutine ranks over the counting
// wrapper of provider inner.
func runPeerRing(t *testing.T, inner string) {
	const n = 4
	job := peerJob(t)
	cfgs := make([]gin.Config, n)
	for r := range cfgs {
		cfgs[r] = gin.Config{Transport: countPrefix + inner, Signals: barrier.Requirement(n, 1), Peers: ringPeers(r, n)}
	}
	errs := goRanks(t, job, cfgs, func(ctx context.Context, c *gin.Comm) error {
		return peerRing(ctx, c, countsOf(job, c.Rank()))
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

func TestPeersRingShm(t *testing.T) { runPeerRing(t, "shm") }

// TestPeersValidation: a rank outside the world fails NewComm, naming it;
// duplicates and the Comm's own rank are ignored; an empty set leaves this
// rank alone, nil every rank.
func TestPeersValidation(t *testing.T) {
	errs := goRanks(t, peerJob(t), []gin.Config{{Peers: []int{1}}, {Peers: []int{0, 2}}}, nil)
	require.Error(t, errs[1])
	assert.ErrorIs(t, errs[1], gin.ErrBadArgument)
	assert.ErrorIs(t, errs[1], gin.ErrPeerOutOfRange)
	assert.Contains(t, errs[1].Error(), "rank 2")
	assert.Error(t, errs[0], "rank 0 must not finish NewComm with rank 1 gone")

	errs = goRanks(t, peerJob(t)+"-ok", []gin.Config{
		{Peers: []int{1, 1, 0, 2, 1}}, {Peers: []int{0, 1, 0}}, {Peers: []int{0}}, {Peers: []int{}},
	}, func(_ context.Context, c *gin.Comm) error {
		want := map[int][]int{0: {0, 1, 2}, 1: {0, 1}, 2: {0, 2}, 3: {3}}[c.Rank()]
		if got := c.Peers(); !slices.Equal(got, want) {
			return fmt.Errorf("Peers() = %v, want %v", got, want)
		}
		if c.IsPeer(-1) || c.IsPeer(4) {
			return errors.New("IsPeer outside the world")
		}
		return nil
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}

	errs = goRanks(t, peerJob(t)+"-all", []gin.Config{{}, {}}, func(_ context.Context, c *gin.Comm) error {
		if got := c.Peers(); !slices.Equal(got, []int{0, 1}) {
			return fmt.Errorf("Peers() without Config.Peers = %v", got)
		}
		return c.CheckTeam(c.World())
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

// TestPeersAsymmetric: a set one side lists and the other does not fails
// NewComm on every rank, naming both, whether the other side lists other
// ranks only or every rank (nil) while the first leaves it out.
func TestPeersAsymmetric(t *testing.T) {
	cases := map[string][]gin.Config{
		"one-sided": {{Peers: []int{1}}, {Peers: []int{}}, {Peers: []int{}}},
		"third":     {{Peers: []int{1}}, {Peers: []int{0, 2}}, {Peers: []int{}}},
		"nil":       {{Peers: []int{1}}, {Peers: []int{0, 2}}, {}},
	}
	for name, cfgs := range cases {
		t.Run(name, func(t *testing.T) {
			errs := goRanks(t, peerJob(t), cfgs, nil)
			for r, err := range errs {
				require.ErrorIs(t, err, gin.ErrBadArgument, "rank %d", r)
				assert.Contains(t, err.Error(), "Config.Peers must be symmetric", "rank %d", r)
			}
		})
	}
	// A rank with every rank (nil) and ranks that all list it agree.
	errs := goRanks(t, peerJob(t)+"-hub", []gin.Config{{}, {Peers: []int{0}}, {Peers: []int{0}}}, func(_ context.Context, c *gin.Comm) error {
		if c.Rank() != 0 && c.IsPeer(3-c.Rank()) {
			return errors.New("spokes see each other")
		}
		return nil
	})
	for r, err := range errs {
		assert.NoError(t, err, "rank %d", r)
	}
}

// TestPeersShrink: Shrink keeps the survivors' peer sets under their new
// ranks. Ring 0-1-2-3-0 where each lists its neighbours; rank 2 is lost;
// old ranks 0, 1, 3 become 0, 1, 2, and old 1 and 3 (new 1 and 2), which
// were not neighbours, still are not peers.
func TestPeersShrink(t *testing.T) {
	const n, dead = 4, 2
	ctx, stop := context.WithCancel(testutils.Deadline(t, time.Minute))
	defer stop()
	boots := bootstrap.NewLocal(peerJob(t), n)
	comms := make([]*gin.Comm, n)
	for r, err := range testutils.GoRanks(n, stop, func(r int) (err error) {
		comms[r], err = gin.NewComm(ctx, boots[r], gin.Config{Signals: 1, PeerFailure: gin.FailPeer, Peers: ringPeers(r, n)})
		return err
	}) {
		require.NoError(t, err, "rank %d", r)
	}
	for _, c := range comms {
		defer c.Close()
	}
	bootstrap.KillLocal(boots[dead])
	require.NoError(t, comms[dead].Close())
	want := map[int][]int{0: {0, 1, 2}, 1: {0, 1}, 3: {0, 2}}
	for r, err := range testutils.GoRanks(n, stop, func(r int) error {
		if r == dead {
			return nil
		}
		if err := waitLost(ctx, comms[r], dead); err != nil {
			return err
		}
		nc, err := comms[r].Shrink(ctx)
		if err != nil {
			return err
		}
		defer nc.Close()
		if got := nc.Peers(); !slices.Equal(got, want[r]) {
			return fmt.Errorf("old rank %d: shrunk Peers() = %v, want %v", r, got, want[r])
		}
		x, _ := nc.Context(0)
		if other := 3 - nc.Rank(); nc.Rank() != 0 {
			if err := x.Signal(nc.World(), other, gin.SignalInc(0)); !errors.Is(err, gin.ErrNotPeer) {
				return fmt.Errorf("new rank %d: signal to %d: %v, want ErrNotPeer", nc.Rank(), other, err)
			}
		}
		return nc.Barrier(ctx)
	}) {
		assert.NoError(t, err, "rank %d", r)
	}
}
