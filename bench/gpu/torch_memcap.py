"""torch_memcap.py - does a 4 GiB carve slice hold for PyTorch?

Run inside `carve run --memory 4GiB`, with the default caching allocator (cuMemAlloc), with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (cuMemCreate and cuMemMap) and with
backend:cudaMallocAsync (the stream-ordered allocator: a memory pool).
Sees: torch.cuda.mem_get_info() total. Must fit 3 GiB and raise torch.cuda.OutOfMemoryError
on 2 GiB more. See memcap_common.py for the JSON line it prints."""
import os

import torch

from memcap_common import main


def sees_total():
    free, total = torch.cuda.mem_get_info()
    print(f"torch.cuda.mem_get_info: free {free >> 20} MiB, total {total >> 20} MiB")
    return total


def alloc(nbytes):
    t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    t.fill_(1)
    torch.cuda.synchronize()
    return t


def is_oom(exc):
    return isinstance(exc, torch.cuda.OutOfMemoryError)


if __name__ == "__main__":
    conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    name = ("torch-expandable" if "expandable_segments:True" in conf else
            "torch-async" if "cudaMallocAsync" in conf else "torch")
    main(name, sees_total, alloc, is_oom)
