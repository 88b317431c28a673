#!/usr/bin/env python3
"""NCCL anchor for the GPU MoE benchmarks (docs/moe_gpu.md).

PyTorch's torch.distributed.all_to_all_single (NCCL backend) on WORLD GPUs
(--world, default 2), one process each, for blocks of ROWS x ELEMS bf16 per
peer pair (every rank sends one block to every rank, itself included, as
dispatch does):

  - stream: GPU time per op over a stream of back-to-back ops (CUDA events
    around the whole stream, divided by the count);
  - single: one op at a time, each after a barrier and a synchronize, timed
    by CUDA events around it: the median (what one dispatch pays).

  - peer copy: the copy engines' all-to-all of the same blocks, every GPU
    copying to every other at once (peer_copy.py), run in this process
    after NCCL's: GB/s per GPU of the bytes that cross GPUs, and one pair's
    copy alone.

Prints one 'ANCHOR name=value' line per figure (microseconds, and GB/s of
the bytes that cross ranks, per rank), which scripts/moe_gpu_device.sh
collects and sets beside rdmactor's figures of the same GPU count. NVLink
multicast stays off.

Usage: moe_nccl_anchor.py [--world N] [--shapes 4096x7168,128x7168,...] [--iters N]
"""
import argparse
import json
import os
import statistics
import sys

from anchor_env import free_port, no_multicast
from peer_copy import peer_copy

no_multicast()

import torch
import torch.distributed as dist
import torch.multiprocessing as mp



def worker(rank, world, port, shapes, iters):
    no_multicast()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    out = []
    for rows, elems in shapes:
        x = torch.randn(world * rows, elems, device="cuda").to(torch.bfloat16)
        y = torch.empty_like(x)
        for _ in range(5):
            dist.all_to_all_single(y, x)
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            dist.all_to_all_single(y, x)
        end.record()
        torch.cuda.synchronize()
        stream_us = start.elapsed_time(end) * 1e3 / iters
        single = []
        for _ in range(iters):
            dist.barrier()
            torch.cuda.synchronize()
            start.record()
            dist.all_to_all_single(y, x)
            end.record()
            torch.cuda.synchronize()
            single.append(start.elapsed_time(end) * 1e3)
        # Check that the bytes moved: block r of y at rank q is block q of x at rank r.
        ok = torch.equal(y[rank * rows:(rank + 1) * rows], x[rank * rows:(rank + 1) * rows])
        cross = (world - 1) * rows * elems * 2
        t = torch.tensor([stream_us, statistics.median(single)], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # the slowest rank
        out.append((rows, elems, t[0].item(), t[1].item(), cross, ok))
    if rank == 0:
        for rows, elems, s_us, one_us, cross, ok in out:
            name = f"nccl_a2a_{rows}x{elems}"
            print(f"ANCHOR {name}_stream_us={s_us:.2f}")
            print(f"ANCHOR {name}_single_us={one_us:.2f}")
            print(f"ANCHOR {name}_stream_GBps={cross / s_us / 1e3:.2f}")
            print(f"ANCHOR {name}_single_GBps={cross / one_us / 1e3:.2f}")
            if not ok:
                print(f"ANCHOR_ERROR {name}: own block did not come back unchanged")
        print("ANCHOR_INFO " + json.dumps({"torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                                           "gpu": torch.cuda.get_device_name(0), "iters": iters, "world": world}))
        sys.stdout.flush()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="4096x7168,128x7168", help="ROWSxELEMS bf16 blocks per peer pair, comma-separated")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--world", type=int, default=2, help="processes, one GPU each (2 or more)")
    a = ap.parse_args()
    if a.world < 2:
        print("moe_nccl_anchor: --world must be at least 2")
        return 2
    shapes = []
    for s in a.shapes.split(","):
        if s:
            r, e = s.lower().split("x")
            shapes.append((int(float(r)), int(e)))
    if torch.cuda.device_count() < a.world:
        print("moe_nccl_anchor: needs %d GPUs, have %d; skipped" % (a.world, torch.cuda.device_count()))
        return 0
    mp.spawn(worker, args=(a.world, free_port(), shapes, a.iters), nprocs=a.world, join=True)
    for rows, elems in shapes:
        per_gpu, pair = peer_copy(a.world, rows, elems, a.iters)
        print(f"ANCHOR ce_a2a_{rows}x{elems}_GBps={per_gpu:.2f}")
        print(f"ANCHOR ce_pair_{rows}x{elems}_GBps={pair:.2f}")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
