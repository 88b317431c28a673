// Package hybrid is the "auto" provider (RDMACTOR_TRANSPORT=auto, gin's
// default where it is registered): each peer gets the provider that fits
// it, shm for ranks on this rank's host and ofi (libfabric, build tag ofi)
// for ranks on other hosts, as NCCL picks its P2P/SHM transports within a
// node and its network plugin between nodes. Hosts come from
// rdma.Config.Hosts, which gin gathers before it opens the provider
// (hostname and boot id, or RDMACTOR_HOST_ID).
//
// Open returns the shm provider itself when every rank is on one host, so
// a one-host job is exactly an shm job. Otherwise it opens both and
// composes them:
//
//   - RegisterMemory registers a shm region (a shared mapping) and the same
//     memory with ofi (rdma.ExternalRegistrar: fi_mr_reg on the mapping);
//     the descriptor carries both, and a peer's Import takes the half that
//     fits it. A WQE's Local region is handed to each QP as the half of its
//     provider.
//   - Connect and Import pick shm or ofi by the peer's host. Ordering and
//     signal semantics are each provider's, per peer: WQEs to one peer go
//     through one QP of one provider, in order.
//   - Signal words are one memory: shm peers add to them with atomics in
//     their own Posts, the ofi progress goroutine adds what arrives from
//     other hosts; both claim the same mode words (rdma.ClaimMode, the
//     values of rdma.ModeInc/ModeAdd), so SignalInc and SignalAdd stay
//     exclusive between resets whichever peers post them.
//   - Waits: a region's Doorbell is its shm doorbell (rdma.Belled, a futex
//     in the mapping). shm peers ring it after their add; the ofi progress
//     goroutine rings it after each add it applies (the onSignal hook of
//     RegisterExternal). A waiter arms the bell, re-checks its word and
//     sleeps, and each ringer adds, then looks for armed waiters, both with
//     sequentially consistent atomics, so no wake-up is lost, and an idle
//     waiter sleeps in the kernel. The composite is not an rdma.Poller (a
//     gin wait would then block in ofi's CQ, which shm peers cannot wake)
//     but an rdma.SpinPoller: a gin wait reads ofi's CQ while it spins and
//     yields, and ofi's own progress goroutine reads it for waiters that
//     sleep (it spins after activity, then blocks in the CQ's wait
//     object). The endpoints'
//     waits for completions drive it too, through an ofi QP's Progress
//     (ofi's Poll), and a waiter about to sleep on the doorbell hands the
//     CQ back to the progress goroutine (ofi's Resume), which otherwise
//     stands back for a while after a Poll.
//
// Where the build has no ofi provider (no ofi tag), Open fails for ranks
// on several hosts with an error naming every host and its ranks.
//
// ofi's progress goroutine is then the only reader of the CQ at a target
// that waits: it needs the CQ's wait object (RDMACTOR_OFI_WAIT=fd, the
// default). With RDMACTOR_OFI_WAIT=poll it naps between reads once idle,
// and a stream of large writes from another host crawls (tcp moves a
// write's bytes only while the target reads its CQ).
//
// Capabilities are what both providers offer (strong signals only where
// the fabric orders writes), with LoadStore true: load/store reaches the
// ranks of one host, gin's LSA team.
//
// A region's Close deregisters its ofi half at once; its mapping (the shm
// half) stays until the provider's Close, since a write the NIC already
// accepted may still be placed into it (ofi keeps its own regions mapped
// likewise).
package hybrid
