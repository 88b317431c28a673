// Package gpumoe is expert-parallel MoE dispatch and combine on GPUs: the
// algorithms of package moe (DeepEP's normal and low-latency modes), with
// every phase done by CUDA kernels (kernels.cu) that move data with the
// device-side gin API (rdmactor/gin.cuh, the twin of NCCL's ncclGin,
// nccl_device/gin.h, NCCL 2.28-2.30) on the LSA path: peers' windows mapped
// into the kernels over NVLink, one rank per GPU, ranks as processes
// (CUDA IPC) or goroutines (peer access). Rows are bf16; the low-latency
// dispatch optionally carries FP8 e4m3 with one float32 scale per 128
// channels (DeepEP's use_fp8). docs/moe_gpu.md has the design and figures.
//
// # Usage
//
//	g, _ := gpu.New(ctx, gc, gpu.Config{Path: gpu.PathLSA, Barriers: 32}) // gc: gin.Config{Signals: 32 + gpumoe.Signals(size, cfg)}
//	h, _ := gpumoe.New(ctx, g, gpumoe.Config{Sizes: moe.Sizes{Hidden: 7168, TopK: 8, NumExperts: 256, MaxTokens: 4096}})
//	// write the tokens at h.Input() (rows RowStride apart), routing into device memory
//	recv, _ := h.Dispatch(0, topkIdx, topkWeights, numTokens) // queued: layout, counts, rows
//	// experts: read recv.X / recv.Entries on the device, write outputs over recv.X
//	_ = h.Combine(out)                                         // queued: rows pulled back, float32 sum, bf16 out
//	err := h.Sync(ctx)                                         // waits; kernel-recorded errors
//
// and DispatchLL / CombineLL for the low-latency mode (RecvLL slots per
// local expert and source). Nothing waits for the GPU between the phases:
// the host queues kernels; counts, offsets and the number of received rows
// stay on the device (Recv.Read copies them to the host, for checks).
//
// # Caller duties
//
//  1. New, Close and every Dispatch/Combine (DispatchLL/CombineLL) are
//     collective: every rank, same order, equal Config. Each Dispatch is
//     followed by exactly one Combine before the next Dispatch (ErrOrder).
//  2. The gpu.Comm is on the LSA path and has the device signals
//     Config.Signal0 .. Signal0+Signals(size, cfg)-1, used by no one else;
//     New resets them.
//  3. Routing, weights, x and out are device memory that stays valid
//     until Sync; Recv and RecvLL buffers hold one round (ErrStale after).
//  4. Expert outputs are written over Recv.X (normal mode; each the
//     weighted sum over the row's local experts) or into RecvLL.Y (low
//     latency, unweighted: CombineLL applies the weights), on the
//     gpu.Comm's stream between dispatch and combine.
//  5. No other kernel may occupy the GPU's SMs while the Handle's kernels
//     run: a data kernel's blocks wait for each other (at most one
//     1024-thread block per SM, Config.Blocks).
//
// # What is promised, and what is not
//
// Signals follow gin's strong-signal rule across the whole grid: a kernel
// signals a destination once, after every block's puts to it are fenced
// (fence.acq_rel.sys, then a completion count in device memory; the last
// block signals), so the receiver that sees the signal sees every row.
// Signal values count rounds and never need a reset. The low-latency
// routing (a few KiB) goes without a signal, as 8-byte words of a value and
// the round (NCCL's LL protocol), which the receivers read as they land.
// Bad routing (expert
// ids outside [-1, NumExperts)) in normal mode makes every rank move no
// rows that round and Sync return a *KernelError matching
// moe.ErrBadArgument; in low-latency mode the bad pairs are skipped. An
// aborted wait (gpu.Comm.Abort, a Sync context ending) breaks the Handle
// (ErrBroken). A low-latency expert's slots from one source are in the
// source's token order (RecvLL.Src ascends). Not promised: the proxy path
// (ErrNotSupported).
package gpumoe
