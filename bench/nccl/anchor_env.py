"""What the NCCL anchors share: NVLink multicast kept off (set before torch
is imported, and again in each spawned worker) and a free port for the
process group's rendezvous."""
import os
import socket

NO_MULTICAST = (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1"))


def no_multicast():
    for k, v in NO_MULTICAST:
        os.environ[k] = v


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
