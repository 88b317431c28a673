// Package ofi is the libfabric rdma provider: ranks on any hosts write each
// other's memory with one-sided RMA over an FI_EP_RDM endpoint (fi_rma(3),
// libfabric >= 1.17). It is behind the build tag ofi and needs cgo and
// libfabric-dev (it links -lfabric); a build without them registers "ofi"
// all the same, and Open then returns an *rdma.UnsupportedError saying
// "build with -tags ofi", so RDMACTOR_TRANSPORT=ofi fails clearly.
//
// It registers itself as "ofi" when imported; gin imports no provider, and
// transport/rdma/std (which package actor imports) imports this one beside
// shm and auto. Programs select it with RDMACTOR_TRANSPORT=ofi
// (gin.Config.Transport, rdmarun -transport ofi); auto uses it between
// hosts. docs/ofi.md has the design, configuration, quirks and tests;
// docs/benchmarks.md the figures.
//
// # Choosing the fabric
//
// RDMACTOR_OFI_PROVIDER names the libfabric provider (tcp, sockets, verbs,
// efa...); by default the first that fi_getinfo offers for FI_EP_RDM with
// RMA, skipping intra-node and datagram ones. RDMACTOR_OFI_IFACE picks the
// domain (the network interface for tcp and sockets). RDMACTOR_OFI_SIGNALS
// picks the signal strategy (below), RDMACTOR_OFI_PROGRESS manual (default)
// or auto progress. Every rank of a job must use the same settings; a
// descriptor of a rank with another signal strategy is refused at Import.
//
// Memory registration honours the mr_mode the domain requires (fi_mr(3)):
// FI_MR_LOCAL (fi_mr_desc goes with every local buffer), FI_MR_VIRT_ADDR
// (peers address a region by its virtual address, else by offset),
// FI_MR_PROV_KEY (keys come from fi_mr_key; otherwise the region id is the
// requested key), FI_MR_ENDPOINT (regions bound to the endpoint and
// enabled), FI_MR_RMA_EVENT (registered with FI_RMA_EVENT and enabled),
// FI_MR_ALLOCATED (regions are always allocated before registration).
// Region memory is an anonymous mapping, never Go memory.
//
// Addresses travel in region descriptors: each carries the owner's
// endpoint name and control region, so the bootstrap's exchange of window
// descriptors (gin) is the address exchange; the first Import of a peer
// inserts it into the address vector and starts the connection.
//
// # Signals: two strategies
//
// cqdata (chosen when the domain has 64-bit remote CQ data,
// cq_data_size >= 8): a signalled put is one fi_writedata whose remote CQ
// data encodes the signal (region id, word, add value; see imm.go). The
// target's progress goroutine reads it from its completion queue and
// applies the add to its own signal word with an atomic add, after the
// write's data is placed. With FI_ORDER_RMA_WAW (tcp;ofi_rxm without
// FI_ATOMIC, sockets) writes of one endpoint to one peer are placed in
// order, so signals are strong; without it, weak. Any SignalAdd value and
// VA signals are supported. The SignalInc/SignalAdd mixing rule is checked
// at the initiator, with a query to the target when the mode changes
// (query.go), so ErrMixedSignalOps is returned by the post.
//
// counter (chosen when cqdata is not available and the domain has
// FI_RMA_EVENT, or with RDMACTOR_OFI_SIGNALS=counter): EFA style, as in
// the aws-ofi-nccl EFA-GDA backend.
// The target opens one signal endpoint per signal with a counter bound for
// FI_REMOTE_WRITE; one write through it ticks the signal by one (value and
// signal in one write). SignalAdd is rejected with an
// *rdma.UnsupportedError (not emulated by n writes), and so are VA
// signals; signals are weak. The signals region is recognised as the first
// exported region of a signals region's size (rdma.SignalCount; gin
// registers it first).
//
// # Capabilities
//
//	                 cqdata                    counter
//	StrongSignals    FI_ORDER_RMA_WAW offered  false
//	SignalAdd        true                      false
//	MaxSignals       65536                     domain ep_cnt/cntr_cnt - 2
//	MaxPutSize       min(max_msg_size, 1 GiB)  same
//	LoadStore        false                     false
//	Inline           false                     false
//
// # Progress and completion
//
// Each provider runs one progress goroutine, locked to its OS thread, that
// reads the completion queue (and the counters): it drives manual
// progress, routes local completions to their QP, turns CQ error entries
// (fi_cq_readerr, with the provider's fi_cq_strerror message) into the
// QP's *rdma.QPError, and applies incoming signals. It polls while
// operations are in flight and for RDMACTOR_OFI_SPIN (20µs) after its last
// activity, then blocks on the CQ's wait object (in Go's netpoller where
// it is an fd, else in fi_cq_sread), woken by the kernel when data
// arrives and by fi_cq_signal when this rank posts. With
// RDMACTOR_OFI_WAIT=poll (and always on sockets) the CQ has no wait
// object, which makes every fi_cq_read on tcp;ofi_rxm cheaper (the
// latency of scripts/bench_ofi.sh), and the goroutine naps a sixteenth of
// its idle time instead, up to RDMACTOR_OFI_IDLE_MAX (4ms). The Provider
// is an rdma.BlockingPoller: every wait on it (gin's signal and counter
// waits, Flush, the endpoint's SQ room wait, a mode query) reads the CQ
// itself with Poll and then PollWait, which blocks on the wait object
// where there is one (Kick ends it), and the progress goroutine stands
// back while such calls come. QP.Progress only reports the completions found, in post
// order.
//
// A local completion means the source may be reused (gin's Flush); it is
// never taken as delivery: on tcp it means only that the bytes reached the
// socket. Delivery is what a signal says: the target applies it after the
// data is placed. Small writes complete inside Post: injected (FI_INJECT,
// up to the domain's inject_size) where that is safe, else staged (up to
// 4 KiB, copied into a registered slot and posted from there).
//
// -FI_EAGAIN from a post (a full queue, a connection being set up) is
// retried up to RDMACTOR_OFI_POST_TIMEOUT (10 s); past it, and on any
// other libfabric error, the QP fails.
//
// # Quirks (libfabric 1.17)
//
// ofi_rxm crashes when an injected write fails (its error entry has no
// context), so nothing is injected on rxm; sockets loses the remote CQ
// data of writes posted with FI_INJECT or without FI_COMPLETION, echoes
// FI_REMOTE_CQ_DATA in local completions, and sends a write only when
// progressed, so every post there reads the CQ once. See config.go,
// quirks.
//
// A SignalInc or SignalAdd that meets the other mode at the target (two
// ranks claiming one reset signal with different modes) is not applied:
// the target counts it (Provider.Stats) and reports it to the initiator,
// whose next post to that rank returns ErrMixedSignalOps (query.go).
// Region.Close keeps the memory mapped until the provider closes.
package ofi
