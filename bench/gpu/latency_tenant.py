"""latency_tenant.py - a latency-sensitive tenant: ResNet-50 (torchvision, random weights),
fp16, batch 8, closed loop with a think time; or a decode-like loop of a small transformer
layer (--model decoder). Prints one JSON line with p50/p99 in ms after the warm-up.

  python3 bench/gpu/latency_tenant.py [--model resnet50|decoder] [--seconds S] [--think-ms T]
"""
import argparse
import json
import time

import torch


def build(model):
    if model == "resnet50":
        import torchvision
        net = torchvision.models.resnet50(weights=None).half().cuda().eval()
        x = torch.randn(8, 3, 224, 224, device="cuda", dtype=torch.half)
        return lambda: net(x)
    layer = torch.nn.TransformerDecoderLayer(1024, 16, 4096, batch_first=True).half().cuda().eval()
    tgt = torch.randn(8, 1, 1024, device="cuda", dtype=torch.half)
    mem = torch.randn(8, 256, 1024, device="cuda", dtype=torch.half)

    def step():  # one decode step: a token through 8 layers
        y = tgt
        for _ in range(8):
            y = layer(y, mem)
        return y
    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50", choices=["resnet50", "decoder"])
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--think-ms", type=float, default=2)
    ap.add_argument("--warmup", type=int, default=30)
    a = ap.parse_args()
    run = build(a.model)
    lat = []
    with torch.no_grad():
        for _ in range(a.warmup):
            run()
        torch.cuda.synchronize()
        end = time.perf_counter() + a.seconds
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            run()
            torch.cuda.synchronize()
            lat.append((time.perf_counter() - t0) * 1000)
            time.sleep(a.think_ms / 1000)
    lat.sort()
    print(json.dumps({"model": a.model, "requests": len(lat), "p50_ms": round(lat[len(lat) // 2], 3),
                      "p99_ms": round(lat[len(lat) * 99 // 100], 3)}), flush=True)


if __name__ == "__main__":
    main()
