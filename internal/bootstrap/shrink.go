package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmactor/rdmactor/transport/rdma"
)

// ErrExcluded is Shrink's error at a rank that the other survivors count
// lost: it is not a member of the shrunk job.
var ErrExcluded = errors.New("rank excluded from the shrunk job: the survivors count it lost")

// ErrRankZeroLost is Shrink's error where the control plane runs through
// rank 0 (package remote's coordinator) and rank 0 is lost: no survivor can
// reach the others any more.
var ErrRankZeroLost = errors.New("rank 0 lost: its coordinator carries the control plane, so the survivors cannot shrink")

// ReasonClosed is the *rdma.PeerLostError reason for a rank that closed its
// Bootstrap before a collective it had to join (a clean leave, not a crash).
const ReasonClosed = reasonClosed

// Shrinker is implemented by Bootstraps that can make the control plane of
// their survivors, as ncclCommShrink (NCCL 2.27, "Shrinking a
// communicator") makes a communicator without the excluded ranks.
type Shrinker interface {
	// Shrink is a collective of the ranks that are not lost: each passes
	// the ranks it knows lost (ranks of this Bootstrap; its own is
	// ignored), and all get a Bootstrap of the same members: every rank
	// of this one except the union of those sets and of the ranks the
	// control plane itself saw lost, renumbered densely in rank order. A
	// rank lost before it joins the agreement is left out without
	// waiting for it; one lost after it joined is a member, whose loss
	// the new Bootstrap reports as any other. This Bootstrap stays as it
	// is (failed by the losses) and is closed by the caller; the control
	// plane lives until both are closed.
	//
	// Errors: ErrExcluded at a rank the others count lost; ErrRankZeroLost
	// where the implementation needs rank 0 and it is lost; ctx's error
	// (wrapped), after which the ranks' Shrink calls are out of step
	// (close this Bootstrap); rdma.ErrClosed after Close.
	Shrink(ctx context.Context, lost []int) (Bootstrap, error)
}

// Shrunk is implemented by the Bootstraps that Shrink returns.
type Shrunk interface {
	// ParentRanks is, by rank of this Bootstrap, the rank each member had
	// in the Bootstrap it was shrunk from (ascending). The caller may
	// modify it.
	ParentRanks() []int
}

// Agreed is the outcome of one Shrink: the K-th of group Parent, which
// made group Group of Members (world ranks, ascending).
type Agreed struct {
	Parent  string `msgpack:"p"`
	K       int    `msgpack:"k"`
	Group   string `msgpack:"g"`
	Members []int  `msgpack:"m"`
}

// Delivery is an Agreed that Groups asks its caller to send to world rank To.
type Delivery struct {
	To     int
	Agreed *Agreed
}

// childGroup names the group made by the k-th Shrink of parent; the world
// is group "".
func childGroup(parent string, k int) string { return parent + "/" + strconv.Itoa(k) }

// GroupJob is the job name of group in the job named root: distinct per
// group, since providers name their shared-memory regions after it, and
// at most 64 characters (CheckJob).
func GroupJob(root, group string) string {
	if group == "" {
		return root
	}
	j := root + "-s" + strings.ReplaceAll(group[1:], "/", ".")
	if len(j) <= 64 {
		return j
	}
	h := sha256.Sum256([]byte(j))
	return root[:min(len(root), 40)] + "-s" + hex.EncodeToString(h[:8])
}

// Groups is the side of Shrink that sees every rank's messages (NewLocal's
// hub, package remote's coordinator): it agrees on the lost sets and
// completes the shrunk groups' collectives. It does no I/O: its methods
// return what to send. Not safe for concurrent use; the caller serializes.
type Groups struct {
	lost   []bool // world ranks lost
	groups map[string]*group
}

type group struct {
	members []int       // world ranks, ascending
	index   map[int]int // world rank -> group rank
	left    []bool      // by group rank: closed its Bootstrap of the group
	agree   map[int]*agreement
	done    map[int]*Agreed
	rounds  map[uint64]*Round
}

// agreement is a Shrink of a group under way: who joined, whom they count lost.
type agreement struct {
	have []bool // by group rank
	lost []bool // by group rank
}

// NewGroups returns the Groups of a job of size ranks: the world only.
func NewGroups(size int) *Groups {
	g := &Groups{lost: make([]bool, size), groups: map[string]*group{}}
	g.add("", seq(size))
	return g
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

func (g *Groups) add(id string, members []int) *group {
	gr := &group{members: members, index: make(map[int]int, len(members)), left: make([]bool, len(members)),
		agree: map[int]*agreement{}, done: map[int]*Agreed{}, rounds: map[uint64]*Round{}}
	for i, w := range members {
		gr.index[w] = i
	}
	g.groups[id] = gr
	return gr
}

// Agree records that world rank w joined the k-th Shrink of group parent
// counting the world ranks lost lost, and returns the outcomes to send if
// that completes it (to every rank that joined it; to w alone if it was
// complete already). Messages of unknown groups or non-members are dropped.
func (g *Groups) Agree(parent string, k, w int, lost []int) []Delivery {
	gr := g.groups[parent]
	if gr == nil {
		return nil
	}
	i, ok := gr.index[w]
	if !ok {
		return nil
	}
	if a := gr.done[k]; a != nil {
		return []Delivery{{To: w, Agreed: a}}
	}
	a := gr.agree[k]
	if a == nil {
		a = &agreement{have: make([]bool, len(gr.members)), lost: make([]bool, len(gr.members))}
		gr.agree[k] = a
	}
	a.have[i] = true
	for _, l := range lost {
		if j, ok := gr.index[l]; ok && l != w {
			a.lost[j] = true
		}
	}
	return g.check(parent, gr, k, a)
}

// check completes agreement k of gr when every member that nobody counts
// lost (nor the control plane, nor left the group) has joined it.
func (g *Groups) check(parent string, gr *group, k int, a *agreement) []Delivery {
	var members []int
	for i, w := range gr.members {
		if a.lost[i] || g.lost[w] || gr.left[i] {
			continue
		}
		if !a.have[i] {
			return nil
		}
		members = append(members, w)
	}
	res := &Agreed{Parent: parent, K: k, Group: childGroup(parent, k), Members: members}
	if len(members) > 0 {
		g.add(res.Group, members)
	}
	gr.done[k] = res
	delete(gr.agree, k)
	var out []Delivery
	for i, w := range gr.members {
		if a.have[i] {
			out = append(out, Delivery{To: w, Agreed: res})
		}
	}
	return out
}

// recheck tries every pending agreement of gr (after a loss or a leave).
func (g *Groups) recheck(id string, gr *group) []Delivery {
	var out []Delivery
	ks := make([]int, 0, len(gr.agree))
	for k := range gr.agree {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		out = append(out, g.check(id, gr, k, gr.agree[k])...)
	}
	return out
}

// Lose records that world rank w is lost and returns the outcomes of the
// agreements that no longer wait for it.
func (g *Groups) Lose(w int) []Delivery {
	if w < 0 || w >= len(g.lost) || g.lost[w] {
		return nil
	}
	g.lost[w] = true
	var out []Delivery
	for id, gr := range g.groups {
		if _, ok := gr.index[w]; ok {
			out = append(out, g.recheck(id, gr)...)
		}
	}
	return out
}

// Leave records that world rank w closed its Bootstrap of group id (it
// joins none of the group's Shrinks any more) and returns the outcomes of
// the agreements that no longer wait for it.
func (g *Groups) Leave(id string, w int) []Delivery {
	gr := g.groups[id]
	if gr == nil {
		return nil
	}
	i, ok := gr.index[w]
	if !ok || gr.left[i] {
		return nil
	}
	gr.left[i] = true
	return g.recheck(id, gr)
}

// Gather adds world rank w's data to collective seq of group id. When that
// completes it, it returns the data by group rank and the world ranks to
// send it to (members neither lost nor left).
func (g *Groups) Gather(id string, seq uint64, w int, data []byte) (to []int, all [][]byte, done bool) {
	gr := g.groups[id]
	if gr == nil {
		return nil, nil, false
	}
	i, ok := gr.index[w]
	if !ok {
		return nil, nil, false
	}
	rd := gr.rounds[seq]
	if rd == nil {
		rd = NewRound(len(gr.members))
		gr.rounds[seq] = rd
	}
	if !rd.Add(i, data) {
		return nil, nil, false
	}
	delete(gr.rounds, seq)
	return g.Live(id), rd.Data(), true
}

// Members returns the world ranks of group id, ascending (nil if unknown).
func (g *Groups) Members(id string) []int {
	if gr := g.groups[id]; gr != nil {
		return gr.members
	}
	return nil
}

// Live returns the world ranks of group id that are neither lost nor left.
func (g *Groups) Live(id string) []int {
	gr := g.groups[id]
	if gr == nil {
		return nil
	}
	var out []int
	for i, w := range gr.members {
		if !gr.left[i] && !g.lost[w] {
			out = append(out, w)
		}
	}
	return out
}

// Sender carries one rank's Shrink messages to whatever runs Groups.
type Sender interface {
	// Agree sends this rank's part of the k-th Shrink of group parent:
	// the world ranks it counts lost.
	Agree(parent string, k int, lost []int)
	// Contribute sends this rank's data for collective seq of group.
	Contribute(group string, seq uint64, data []byte)
	// Leave says this rank closed its Bootstrap of group after joining
	// collective seq (its last).
	Leave(group string, seq uint64)
}

// Family is one rank's side of Shrink: the Bootstraps Shrink made at this
// rank, by group, and the Shrinks waiting for their outcome. NewLocal's
// ranks and package remote's share it; they feed it what arrives (Agreed,
// Deliver, NoteLeft, Lose, Abort). Its methods are safe for concurrent use.
type Family struct {
	rank int    // world rank
	size int    // world size
	job  string // the world's job name
	send Sender
	// last is called once when the last of the rank's Bootstraps (the
	// world's included) is closed: the control plane may shut down.
	last func() error

	mu       sync.Mutex
	subs     map[string]*Sub
	next     map[string]int // Shrinks begun, by parent group
	waits    map[string]chan *Agreed
	lost     map[int]string // world ranks lost, with the reason
	open     int            // Bootstraps not closed, the world's included
	abortErr error
	aborted  chan struct{}
}

// NewFamily returns the Family of world rank rank of the job of size ranks
// named job. send carries its messages; last is called (once) when the
// world's Bootstrap and every one Shrink made are closed, and its result
// is the last Close's.
func NewFamily(rank, size int, job string, send Sender, last func() error) *Family {
	return &Family{rank: rank, size: size, job: job, send: send, last: last, subs: map[string]*Sub{}, next: map[string]int{},
		waits: map[string]chan *Agreed{}, lost: map[int]string{}, open: 1, aborted: make(chan struct{})}
}

func agreeKey(parent string, k int) string { return parent + "#" + strconv.Itoa(k) }

// ShrinkWorld runs Shrinker.Shrink for this rank's world Bootstrap.
func (f *Family) ShrinkWorld(ctx context.Context, lost []int) (Bootstrap, error) {
	return f.Shrink(ctx, "", seq(f.size), lost)
}

// Shrink runs Shrinker.Shrink for this rank's Bootstrap of group parent,
// whose members are the world ranks members (by group rank); lost are
// group ranks.
func (f *Family) Shrink(ctx context.Context, parent string, members []int, lost []int) (Bootstrap, error) {
	var lw []int
	for _, l := range lost {
		if l < 0 || l >= len(members) {
			return nil, fmt.Errorf("bootstrap: shrink: lost rank %d of %d out of range", l, len(members))
		}
		lw = append(lw, members[l])
	}
	f.mu.Lock()
	if f.abortErr != nil {
		err := f.abortErr
		f.mu.Unlock()
		return nil, fmt.Errorf("bootstrap: shrink: %w", err)
	}
	for w := range f.lost {
		if slices.Contains(members, w) {
			lw = append(lw, w)
		}
	}
	k := f.next[parent]
	f.next[parent]++
	key := agreeKey(parent, k)
	ch := make(chan *Agreed, 1)
	f.waits[key] = ch
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.waits, key)
		f.mu.Unlock()
	}()
	f.send.Agree(parent, k, lw)
	var a *Agreed
	select {
	case a = <-ch:
	case <-f.aborted:
		return nil, fmt.Errorf("bootstrap: shrink: %w", f.abortErr)
	case <-ctx.Done():
		return nil, fmt.Errorf("bootstrap: shrink: waiting for the survivors' agreement: %w", ctx.Err())
	}
	me := slices.Index(a.Members, f.rank)
	if me < 0 {
		return nil, fmt.Errorf("bootstrap: shrink: world rank %d: %w", f.rank, ErrExcluded)
	}
	s := &Sub{f: f, group: a.Group, members: a.Members, parents: make([]int, len(a.Members))}
	for i, w := range a.Members {
		s.parents[i] = slices.Index(members, w)
	}
	s.RankState = NewRankState(me, len(a.Members), GroupJob(f.job, a.Group), func(seq uint64, data []byte) {
		f.send.Contribute(a.Group, seq, data)
	})
	f.mu.Lock()
	f.subs[a.Group] = s
	f.open++
	known := make(map[int]string, len(f.lost))
	for w, why := range f.lost {
		known[w] = why
	}
	f.mu.Unlock()
	for w, why := range known { // lost since the agreement
		if i := slices.Index(a.Members, w); i >= 0 {
			s.Lose(&rdma.PeerLostError{Rank: i, Reason: why})
		}
	}
	return s, nil
}

// Agreed hands the outcome of a Shrink to the call waiting for it.
func (f *Family) Agreed(a *Agreed) {
	f.mu.Lock()
	ch := f.waits[agreeKey(a.Parent, a.K)]
	f.mu.Unlock()
	if ch != nil {
		select {
		case ch <- a:
		default:
		}
	}
}

func (f *Family) sub(group string) *Sub {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subs[group]
}

// Deliver hands the result of collective seq of group to its Bootstrap.
func (f *Family) Deliver(group string, seq uint64, data [][]byte) {
	if s := f.sub(group); s != nil {
		s.Deliver(seq, data)
	}
}

// NoteLeft tells group's Bootstrap that world rank w closed its own after
// joining collective at.
func (f *Family) NoteLeft(group string, w int, at uint64) {
	if s := f.sub(group); s != nil {
		if i := slices.Index(s.members, w); i >= 0 {
			s.NoteLeft(i, at)
		}
	}
}

// Lose tells every Bootstrap Shrink made that has world rank w as a member
// that it is lost, and remembers it for those made later.
func (f *Family) Lose(w int, reason string) {
	f.mu.Lock()
	if _, ok := f.lost[w]; ok {
		f.mu.Unlock()
		return
	}
	f.lost[w] = reason
	subs := f.all()
	f.mu.Unlock()
	for _, s := range subs {
		if i := slices.Index(s.members, w); i >= 0 {
			s.Lose(&rdma.PeerLostError{Rank: i, Reason: reason})
		}
	}
}

// Each calls fn for every open Bootstrap Shrink made at this rank, with
// the group rank of world rank w there (-1 if not a member).
func (f *Family) Each(w int, fn func(s *Sub, rank int)) {
	f.mu.Lock()
	subs := f.all()
	f.mu.Unlock()
	for _, s := range subs {
		fn(s, slices.Index(s.members, w))
	}
}

func (f *Family) all() []*Sub {
	subs := make([]*Sub, 0, len(f.subs))
	for _, s := range f.subs {
		subs = append(subs, s)
	}
	return subs
}

// Abort ends the waiting Shrinks, and fails later ones, with err (the
// control plane can no longer agree).
func (f *Family) Abort(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.abortErr == nil {
		f.abortErr = err
		close(f.aborted)
	}
}

// Release marks one of the rank's Bootstraps closed; after the last it
// calls last and returns its result.
func (f *Family) Release() error {
	f.mu.Lock()
	f.open--
	done := f.open == 0
	f.mu.Unlock()
	if done && f.last != nil {
		return f.last()
	}
	return nil
}

// Sub is a Bootstrap that Shrink made: the shared RankState of a group's
// rank, whose messages its Family carries.
type Sub struct {
	*RankState
	f       *Family
	group   string
	members []int // world ranks by rank
	parents []int // parent group ranks by rank

	closeOnce sync.Once
	closeErr  error
}

var (
	_ Shrinker = (*Sub)(nil)
	_ Shrunk   = (*Sub)(nil)
)

// ParentRanks: see Shrunk.
func (s *Sub) ParentRanks() []int { return slices.Clone(s.parents) }

// WorldRanks is, by rank, each member's rank in the job's first Bootstrap.
func (s *Sub) WorldRanks() []int { return slices.Clone(s.members) }

// Shrink: see Shrinker.
func (s *Sub) Shrink(ctx context.Context, lost []int) (Bootstrap, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("bootstrap: shrink: %w", rdma.ErrClosed)
	}
	return s.f.Shrink(ctx, s.group, s.members, lost)
}

func (s *RankState) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close leaves the group (the others learn it as a clean leave) and, if it
// was the rank's last open Bootstrap, shuts its control plane down.
func (s *Sub) Close() error {
	s.closeOnce.Do(func() {
		at := s.Leave()
		s.f.mu.Lock()
		delete(s.f.subs, s.group)
		s.f.mu.Unlock()
		s.f.send.Leave(s.group, at)
		s.closeErr = s.f.Release()
	})
	return s.closeErr
}
