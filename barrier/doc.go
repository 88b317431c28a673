// Package barrier holds one-sided barriers over a gin team, written on gin
// alone: Session, NCCL's ncclGinBarrierSession (nccl_device/gin_barrier.h
// and impl/gin_barrier__funcs.h, NCCL 2.29); DisseminationSession, a
// log2(n)-round barrier for large teams; and HierarchicalSession, for
// teams that span hosts.
//
// # Usage
//
//	sig0 := gin.Signal(0)
//	cfg := gin.Config{Signals: barrier.Requirement(size, 2)}  // 2 barrier indices on the world team
//	comm, _ := gin.Init(ctx, cfg)
//	x, _ := comm.Context(0)
//	b, _ := barrier.NewWorldSession(x, sig0, 0)                // index 0
//	for step := range steps {
//		// ... puts to peers ...
//		if err := b.Sync(ctx, barrier.FencePut); err != nil { ... }  // give ctx a deadline
//	}
//
// Caller duties:
//
//  1. Reserve the signals when the Comm is made: Requirement (or
//     DisseminationRequirement, HierarchicalRequirement) signals from
//     signal0 on, added to gin.Config.Signals; nothing else may update
//     them.
//  2. Every member of the team makes its session with equal signal0,
//     index and options, and calls Sync equally often.
//  3. One goroutine per session; sessions of different indices may run
//     at once (NCCL: one index per CTA).
//  4. Give every Sync a context with a deadline, or use SyncTimeout: a
//     member that never arrives ends the wait with a *TimeoutError, and
//     breaks the session (ErrBroken afterwards).
//
// # Epochs and slots
//
// Member p of a team of n owns one slot per barrier index at every member:
// signal signal0 + index*n + p. A barrier adds 1 to the caller's slot at
// each peer; each peer keeps the epoch it expects next from that slot in
// the slot's gin signal shadow (gin.Context.IncreaseSignalShadow), and
// waits until the slot reaches it, comparing the low 32 bits in rolling
// order (a <= b iff ((b-a) & m) <= m>>1). A slot is never more than one
// epoch ahead of its shadow (no member starts barrier k+1 before all
// entered barrier k), so the 32-bit comparison survives wraparound; since
// epochs live in shadows, a new session on the same slots resumes them.
//
// # Signal mode: SignalAdd(slot, 1), not SignalInc
//
// NCCL arrives with ncclGin_SignalInc. Here every update of a slot is
// gin.SignalAdd(slot, 1) (the Add mode of gin's Inc/Add rule), a decision
// taken for one reason: a slot in Add mode can be moved by any amount at
// once, so WithEpoch can start epochs next to 2^32 and tests run barriers
// across the 32-bit wraparound, and a barrier can be restarted at a given
// epoch; in Inc mode that would take 2^32 signals. SignalAdd with the value
// 1 needs nothing of the provider (gin's Capabilities.SignalAdd concerns
// other values) and costs the same on shm. Do not update the slots with
// SignalInc: gin reports the mix as gin.ErrMixedSignalOps.
//
// # Fences
//
// The fence levels are NCCL's (ncclGinFenceLevel None, Put, Get, NCCL
// 2.32), plus FenceFlush. With strong signals a member's arrival signal to
// a peer implies every put it issued earlier on the same context to that
// peer, so after a Session.Sync each member sees every put addressed to
// it before the barrier, except its own loopback puts: FencePut includes
// the caller's own slot for those. FenceGet waits, after the arrivals,
// until the gets the caller issued before Sync have landed. FenceFlush
// flushes the context first (sources reusable, gets landed before the
// caller arrives). A DisseminationSession signals only log2(n) peers, and
// a HierarchicalSession member only its leader, so neither can fence puts
// (ErrFence); FenceGet and FenceFlush concern the caller's own operations
// and work on every kind.
//
// # Which barrier
//
// Session posts n-1 signals and waits one signal latency: on one host
// (shm) its cost grows with the n-1 posts (~0.1-0.2 µs each), on a network
// with the n-1 messages injected by one rank. DisseminationSession posts
// ceil(log2 n) signals but waits as many latencies in sequence. Session
// wins for small teams and whenever a put fence is needed;
// DisseminationSession wins once (n-1) posts cost more than log2(n)
// round trips: past about 16-32 ranks on shm (measured in
// docs/collectives.md), earlier on a NIC whose injection rate is the
// limit. Across hosts, HierarchicalSession with the hosts' ranks as groups
// sends only its leaders' signals over the network: on 2 + 2 ranks over
// ofi tcp it took about half the time of the other two.
//
// # Pacing
//
// Waits use gin.Context.WaitSignal, paced by gin.Config.Idle, unless
// WithPacing asks for Pacing.OSYield: ranks that share cores with other
// processes must give the core away (sched_yield) or the member they wait
// for cannot run.
package barrier
