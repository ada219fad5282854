"""cupy_memcap.py - does a 4 GiB carve slice hold for CuPy?

Run inside `carve run --memory 4GiB`. Sees: cupy.cuda.runtime.memGetInfo() total. Must fit
3 GiB and raise cupy.cuda.memory.OutOfMemoryError on 2 GiB more. See memcap_common.py."""
import cupy

from memcap_common import main


def sees_total():
    free, total = cupy.cuda.runtime.memGetInfo()
    print(f"cupy.cuda.runtime.memGetInfo: free {free >> 20} MiB, total {total >> 20} MiB")
    return total


def alloc(nbytes):
    a = cupy.empty(nbytes, dtype=cupy.uint8)
    a.fill(1)
    cupy.cuda.Device().synchronize()
    return a


def is_oom(exc):
    return isinstance(exc, cupy.cuda.memory.OutOfMemoryError)


if __name__ == "__main__":
    main("cupy", sees_total, alloc, is_oom)
