// Package moe is expert-parallel MoE dispatch and combine on gin's
// one-sided puts and signals, after DeepEP (github.com/deepseek-ai/DeepEP:
// deep_ep/buffer.py, csrc/kernels/intranode.cu and internode_ll.cu): each
// rank routes its tokens to the ranks that hold their top-k experts, the
// experts run where they are, and the outputs come back to be summed with
// the routing weights. Rows are float32 or bfloat16 carried as uint16
// (Elem); arithmetic is float32.
//
// # Usage
//
//	g, _ := gin.Init(ctx, gin.Config{})                        // one rank of an rdmarun job
//	h, _ := moe.New[uint16](ctx, g, moe.Config{Sizes: moe.Sizes{Hidden: 7168, TopK: 8, NumExperts: 256, MaxTokens: 4096}})
//	x := h.Input()[:tokens*7168]                              // write tokens here: no copy
//	recv, _ := h.Dispatch(ctx, x, topkIdx, topkWeights)        // give ctx a deadline
//	for i := range recv.NumRecv {                             // experts, in place
//		moe.ExpertOutput(recv.X[i*7168:(i+1)*7168], recv, i, 8, scratch, expert)
//	}
//	_ = h.Combine(ctx, recv.X, out)                            // out[t] = sum_k w[t][k] * expert_k(x[t])
//
// and for batches of up to about 128 tokens per rank, DispatchLL and
// CombineLL (Config.MaxLLTokens).
//
// Caller duties:
//
//  1. Every rank makes the same calls in the same order: New with an equal
//     Config, then rounds of Dispatch and Combine (or DispatchLL and
//     CombineLL), each dispatch followed by exactly one combine before
//     the next dispatch of either mode (ErrOrder otherwise). Token counts
//     may differ between ranks and rounds, up to the Config's maximum.
//  2. What a dispatch returns (Recv, RecvLL, their X views) is valid until
//     the next dispatch of that mode; expert outputs may be written over X
//     in place. Input() may be written between rounds only.
//  3. Give every call a context with a deadline (a call without one gets
//     Config.Timeout). A call that fails after data moved breaks the
//     Handle (ErrBroken).
//  4. The Handle needs strong signals with SignalAdd and VA signals
//     (shm; ofi's cqdata signals over tcp and sockets); New refuses other
//     providers with ErrNotSupported.
//
// # The algorithm, apart from the data movement
//
// layout.go holds the plain functions that decide where every row goes,
// over flat slices with shapes in their doc comments: GetDispatchLayout
// (tokens per rank and per expert, token-in-rank mask, as DeepEP's
// get_dispatch_layout), SendPositions (each token's row in its block for
// each rank), CountMatrix with RecvOffset and CombineOffset (prefix sums
// over ranks), Runs (consecutive tokens for one put), GroupByExpert (the
// received rows by local expert) and LLSlots (low-latency slots). The GPU
// version mirrors them with kernels; the puts and waits around them are
// in dispatch.go, combine.go and lowlatency.go.
//
// # Normal mode: a token once per rank
//
// Dispatch has two phases. Counts: every rank puts to every rank one block
// with its NumTokensPerRank and, for each row it will send there, the
// source index, the top-k restricted to that rank's experts (local ids, -1
// elsewhere) and the weights; the put carries VASignalAdd(count word of
// the sender, 1). Rows: once every block is in, every rank knows the whole
// count matrix C, so rank s puts its rows for rank r at
// RecvOffset(s, r) = sum over s' < s of C[s'][r] in r's receive buffer,
// straight from Input(), consecutive tokens in one put (Config.PerRow
// turns that off), the last put carrying VASignalAdd(data word of s,
// C[s][r]). The receiver waits for each data word to grow by the rows it
// expects. Combine puts each source's block back in one put, at
// CombineOffset(s, r) = sum over r' < r of C[s][r'] in s's combine buffer,
// with VASignalAdd(combine word, rows); the source sums each token's rows
// (ReduceCombined), its own rows straight from its receive buffer. The
// expert side weights its outputs (ExpertOutput); so out[t] is
// sum over k of w[t][k] * expert(x[t]), computed in float32, rounded to
// bf16 once per rank's partial sum and once at the end.
//
// # Low-latency mode: a token once per expert, no count exchange
//
// DispatchLL puts every (token, expert) row into a fixed slot of the
// expert's rank, [local expert][source rank][j], j being the token's
// index among the source's tokens for that expert (LLSlots); then per
// expert one small put of the count and the (token, k) of each slot,
// carrying VASignalAdd(that expert's word, 1), from every rank to every
// expert, rows or not. CombineLL puts each output row back into its
// source's [token][k] slot, then signals the source once; the source sums
// w[t][k] * row over its top-k (ReduceLL), reading rows of its own experts
// in place. This is DeepEP's low_latency_dispatch/combine without the
// packing of rows across sources.
//
// # Epochs: reuse without overwriting
//
// Windows are registered once per Handle (sized by Config) and reused by
// every round, with no sleeps and no extra barrier: signal words only
// grow, and each rank keeps the value it expects next (rounds for count
// and low-latency words, cumulative rows for data and combine words),
// compared in gin's rolling order. The order of the protocol is what makes
// reuse safe:
//
//   - A rank's count block of round k+1 is sent only once it finished
//     round k, and rows are put to a rank only after its count block of
//     the same round arrived: so nobody writes into a receive buffer whose
//     owner still reads the previous round.
//   - Count blocks alternate between two halves by round parity: a rank
//     two rounds ahead would have needed this rank's counts of the round
//     between, sent after it finished reading the older half.
//   - Combine rows of round k+1 reach a rank only after it sent its counts
//     of round k+1, that is after its Combine of round k summed them.
//   - In low-latency mode every rank signals every other rank at the end
//     of CombineLL and every expert at the end of DispatchLL: a rank in
//     round k+1 has heard from every peer after that peer read the slots
//     of round k.
//
// # Signals and contexts
//
// Signals are VA signals (gin.VASignalAdd) in a small StrictOrdering
// window of the Handle, one 64-byte line per word: no gin.Config.Signals
// to reserve, and every put rides its context's data endpoint. One signal
// per (source, destination) stands for every row put before it on the
// same context (strong signals); all puts to one rank go on one context
// (Config.Contexts spreads destinations over contexts, each run by its
// own goroutine).
//
// # What it does not do
//
// It does not pack low-latency rows contiguously per expert across
// sources (RecvLL keeps the slots), it has no hook to overlap the expert
// compute with arrival (every dispatch returns once all rows are in), and
// it does not emulate strong signals on providers that lack them.
package moe
