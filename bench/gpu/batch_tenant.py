"""batch_tenant.py - a batch tenant that keeps the GPU busy: a bf16 8192x8192 matmul loop.
Counts the products completed between --measure-from and --measure-from + --measure-seconds
(seconds after start) and prints their TFLOP/s as one JSON line; runs until the window ends.

  python3 bench/gpu/batch_tenant.py [--measure-from S] [--measure-seconds S]
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--measure-from", type=float, default=5)
    ap.add_argument("--measure-seconds", type=float, default=15)
    a = ap.parse_args()
    n = 8192
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    start = time.perf_counter()
    t_from, t_to = start + a.measure_from, start + a.measure_from + a.measure_seconds
    done, t_first, t_last = 0, None, None
    while True:
        for _ in range(4):
            torch.matmul(x, w)
        torch.cuda.synchronize()
        now = time.perf_counter()
        if now >= t_from:
            if t_first is None:
                t_first = now
            else:
                done += 4
                t_last = now
        if now >= t_to:
            break
    secs = (t_last - t_first) if t_last else 0
    tflops = 2 * n ** 3 * done / secs / 1e12 if secs else 0
    print(json.dumps({"tflops": round(tflops, 1), "products": done, "seconds": round(secs, 2)}), flush=True)


if __name__ == "__main__":
    main()
