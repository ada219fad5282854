"""jax_memcap.py - does a 4 GiB carve slice hold for JAX?

Run inside `carve run --memory 4GiB`. JAX preallocation is off
(XLA_PYTHON_CLIENT_PREALLOCATE=false) and its allocator may use 95% of what the driver says
is free (XLA_PYTHON_CLIENT_MEM_FRACTION, default here .95; JAX's own default .75 of a 4 GiB
slice could not fit 3 GiB). Sees: device.memory_stats()['bytes_limit'], the BFC allocator's
limit, which JAX derives from the driver's free memory, so it shows the slice. Must fit
3 GiB and raise a RESOURCE_EXHAUSTED error on 2 GiB more. See memcap_common.py."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", ".95")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from memcap_common import main  # noqa: E402


def sees_total():
    dev = jax.devices("gpu")[0]
    stats = dev.memory_stats() or {}
    print(f"jax {jax.__version__} on {dev.device_kind}: memory_stats bytes_limit "
          f"{stats.get('bytes_limit', 0) >> 20} MiB")
    return stats["bytes_limit"]


def alloc(nbytes):
    a = jnp.ones((nbytes // 4,), dtype=jnp.float32)  # under 2**31 elements
    a.block_until_ready()
    return a


def is_oom(exc):
    return "RESOURCE_EXHAUSTED" in str(exc) or "Out of memory" in str(exc)


if __name__ == "__main__":
    main("jax", sees_total, alloc, is_oom)
