"""torch_train.py - training throughput, for comparing a run inside a carve slice with one
outside it.

ResNet-50 (torchvision, random weights), batch 64 of synthetic 224x224 images, SGD, bf16
autocast; --warmup steps untimed, then --steps timed steps. Prints images/s and a final JSON
line {"images_per_s", "batch", "steps", "seconds", "device"}."""
import argparse
import json
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    args = ap.parse_args()

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torchvision.models.resnet50(weights=None).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (args.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0

    ips = args.batch * args.steps / secs
    print(f"resnet50 batch {args.batch}: {args.steps} steps in {secs:.2f} s, "
          f"{ips:.1f} images/s on {torch.cuda.get_device_name(0)}", flush=True)
    print(json.dumps({"images_per_s": round(ips, 2), "batch": args.batch, "steps": args.steps,
                      "seconds": round(secs, 3), "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    main()
