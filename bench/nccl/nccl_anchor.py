#!/usr/bin/env python3
"""NCCL latency anchor for the GPU benchmarks (docs/gpu.md).

WORLD processes (--world, default 2), one GPU each (torch.multiprocessing),
PyTorch's NCCL backend:
  - all_reduce of 4 bytes (one float32) over all of them: GPU time per op
    over a stream of ops (CUDA events), and the latency of one op with a
    synchronize after each (what a ping-pong pays);
  - a send/recv ping-pong of 4 bytes between ranks 0 and 1: round trip
    with a synchronize each;
  - send/recv of 1 MiB and 256 MiB from rank 0 to rank 1, a stream of ops
    (CUDA events around all): GPU time per op and GB/s, the anchor of
    BenchmarkLSAPut (one put per launch).
Prints one 'ANCHOR name=value' line per figure (microseconds), which
scripts/gpu_device.sh collects into its table for that GPU count. NVLink
multicast stays off.

Usage: nccl_anchor.py [--world N]
"""
import argparse
import json
import os
import sys
import time

from anchor_env import free_port, no_multicast

no_multicast()

import torch
import torch.distributed as dist
import torch.multiprocessing as mp



def worker(rank, world, port, iters):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    x = torch.ones(1, dtype=torch.float32, device="cuda")
    for _ in range(100):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    dist.barrier()

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        dist.all_reduce(x)
    end.record()
    torch.cuda.synchronize()
    stream_us = start.elapsed_time(end) * 1e3 / iters

    n = 500
    t0 = time.perf_counter()
    for _ in range(n):
        dist.all_reduce(x)
        torch.cuda.synchronize()
    sync_us = (time.perf_counter() - t0) * 1e6 / n

    y = torch.zeros(1, dtype=torch.float32, device="cuda")
    peer = 1 - rank  # ranks 0 and 1 ping-pong; the others only meet the barriers

    def pingpong(count):
        for _ in range(count):
            if rank == 0:
                dist.send(x, peer)
                dist.recv(y, peer)
            elif rank == 1:
                dist.recv(y, peer)
                dist.send(x, peer)
            torch.cuda.synchronize()

    pingpong(20)
    dist.barrier()
    t0 = time.perf_counter()
    pingpong(n)
    rt_us = (time.perf_counter() - t0) * 1e6 / n
    dist.barrier()

    def send_us(nbytes, count):
        # rank 0 sends nbytes to rank 1, count times back to back: GPU time per op
        buf = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
        for _ in range(3):
            if rank == 0:
                dist.send(buf, 1)
            elif rank == 1:
                dist.recv(buf, 0)
        torch.cuda.synchronize()
        dist.barrier()
        start.record()
        for _ in range(count):
            if rank == 0:
                dist.send(buf, 1)
            elif rank == 1:
                dist.recv(buf, 0)
        end.record()
        torch.cuda.synchronize()
        dist.barrier()
        return start.elapsed_time(end) * 1e3 / count

    send_1m, send_256m = send_us(1 << 20, 500), send_us(256 << 20, 20)

    if rank == 0:
        for name, us, nbytes in (("1MiB", send_1m, 1 << 20), ("256MiB", send_256m, 256 << 20)):
            print(f"ANCHOR nccl_send_{name}_us={us:.2f}")
            print(f"ANCHOR nccl_send_{name}_GBps={nbytes / us / 1e3:.1f}")
        print(f"ANCHOR nccl_allreduce_4B_stream_us={stream_us:.2f}")
        print(f"ANCHOR nccl_allreduce_4B_sync_us={sync_us:.2f}")
        print(f"ANCHOR nccl_sendrecv_4B_roundtrip_us={rt_us:.2f}")
        print("ANCHOR_INFO " + json.dumps({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                                           "gpu": torch.cuda.get_device_name(0), "world": world}))
        sys.stdout.flush()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2, help="processes, one GPU each (2 or more)")
    a = ap.parse_args()
    if a.world < 2:
        print("nccl_anchor: --world must be at least 2")
        return 2
    if torch.cuda.device_count() < a.world:
        print("nccl_anchor: needs %d GPUs, have %d; skipped" % (a.world, torch.cuda.device_count()))
        return 0
    mp.spawn(worker, args=(a.world, free_port(), 2000), nprocs=a.world, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
