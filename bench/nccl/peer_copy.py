"""The copy engines' all-to-all: the peer copy anchor of the GPU MoE
benchmarks (docs/moe_gpu.md).

Every GPU copies one block of ROWS x ELEMS bf16 to every other GPU at once
with cuMemcpyAsync (CUDA driver API; peer access on, so each copy is a
peer-to-peer copy by a copy engine, as cuMemcpyPeerAsync), one stream per
(source, destination) pair, all released together by one event. A GPU's
time runs from its streams' release to its last copy's end; per_gpu is
the slowest GPU's median. pair is one copy from GPU 0 to GPU 1 alone."""
import ctypes
import statistics

import torch

_cuda = None


def _memcpy(dst, src, nbytes, stream):
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
        _cuda.cuMemcpyAsync.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_void_p]
    rc = _cuda.cuMemcpyAsync(dst, src, nbytes, stream.cuda_stream)
    if rc != 0:
        raise RuntimeError(f"cuMemcpyAsync: CUresult {rc}")


def _round(world, bufs, streams, nbytes, pairs):
    """One timed round of the given (src, dst) copies; seconds per source GPU."""
    gate = torch.cuda.Event()
    with torch.cuda.device(0):
        torch.cuda._sleep(2_000_000)  # so that every copy is queued before any starts
        gate.record()
    starts, ends = {}, {}
    for i, j in pairs:
        s = streams[i][j]
        s.wait_event(gate)
        st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        st.record(s)
        src, dst = bufs[i][0], bufs[j][1]
        _memcpy(dst.data_ptr() + i * nbytes, src.data_ptr() + j * nbytes, nbytes, s)
        en.record(s)
        starts.setdefault(i, []).append(st)
        ends.setdefault(i, []).append(en)
    for d in range(world):
        torch.cuda.synchronize(d)
    return {i: max(s0.elapsed_time(e) for s0 in starts[i] for e in ends[i]) * 1e-3 for i in starts}


def peer_copy(world, rows, elems, iters):
    """Returns the all-to-all's GB/s per GPU and one pair's GB/s, counting the bytes that cross GPUs."""
    nbytes = rows * elems * 2
    bufs = []
    for d in range(world):
        with torch.cuda.device(d):
            bufs.append((torch.ones(world * rows * elems, dtype=torch.bfloat16, device=d),
                         torch.zeros(world * rows * elems, dtype=torch.bfloat16, device=d)))
    for i in range(world):  # peer access on (PyTorch enables it on a first copy between two devices)
        for j in range(world):
            if i != j:
                bufs[j][1][:8].copy_(torch.zeros(8, dtype=torch.bfloat16, device=i))
    streams = [[torch.cuda.Stream(device=i) for _ in range(world)] for i in range(world)]
    a2a = [(i, j) for i in range(world) for j in range(world) if i != j]
    per, one = [], []
    for it in range(iters + 3):
        t = _round(world, bufs, streams, nbytes, a2a)
        p = _round(world, bufs, streams, nbytes, [(0, 1)])
        if it >= 3:
            per.append(max(t.values()))
            one.append(p[0])
    for d in range(world):  # the first and last element of every block that came in
        for i in range(world):
            blk = bufs[d][1][i * rows * elems:(i + 1) * rows * elems]
            if i != d and (blk[0].item() != 1 or blk[-1].item() != 1):
                raise RuntimeError(f"peer copy: GPU {d} did not receive GPU {i}'s block")
    cross = (world - 1) * nbytes
    return cross / statistics.median(per) / 1e9, nbytes / statistics.median(one) / 1e9
