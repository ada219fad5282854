"""plan_sweep.py - the planner's gap to its bound on random workload lists (docs/plan.md).
Writes one list a seed (workloads of 1-20 GiB, a third up to 45 GiB, 1-60% compute, mixed
latency and trust), plans each on each fleet with `carve plan LIST --fleet F --json`, and prints
for every mechanism the mean gap to the cost bound, the plans above 2%, and the seconds a list
took (all five plans).

  python3 bench/plan_sweep.py [--carve build/bin/carve] [--seeds 3001-3018]
          [--sizes 80,100,120,150,200,256] [--fleet F ...] [--out DIR] [--each]

Seeds are given to the sizes in turn, three seeds a size by default: 3001-3003 are lists of 80,
3004-3006 of 100, and so on (the 18 lists of docs/plan.md, "The simplex's budget past 64").
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

FLEETS = ["A100-80GB@3.5,L4@0.8,T4@0.35", "H100-80GB@2.49,A100-40GB@1.2", "L4@0.8,T4@0.35"]
MECHANISMS = ("time-slicing", "mps", "carve")


def write_list(path, seed, n):
    r = random.Random(seed)
    with open(path, "w") as f:
        f.write("name,memory,compute,latency,trust\n")
        for i in range(n):
            gib = r.randint(1, 45) if r.random() < 1 / 3 else r.randint(1, 20)
            mib = gib * 1024 + r.choice([0, 0, 256, 512])
            compute = r.randint(1, 60)
            latency = r.choice(["strict", "normal", "normal", "relaxed"])
            trust = r.choice(["trusted", "trusted", "untrusted"])
            f.write(f"w{i},{mib}MiB,{compute}%,{latency},{trust}\n")


def seeds_of(text):
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--carve", default="build/bin/carve")
    ap.add_argument("--seeds", default="3001-3018", help="first-last")
    ap.add_argument("--sizes", default="80,100,120,150,200,256")
    ap.add_argument("--fleet", action="append", help="a fleet SPEC (repeat); default three")
    ap.add_argument("--out", help="keep the lists here (default: a temporary directory)")
    ap.add_argument("--each", action="store_true", help="a line per list, fleet and mechanism")
    a = ap.parse_args()
    seeds = seeds_of(a.seeds)
    sizes = [int(s) for s in a.sizes.split(",")]
    per_size = max(1, len(seeds) // len(sizes))
    out = a.out or tempfile.mkdtemp(prefix="plan-sweep.")
    os.makedirs(out, exist_ok=True)
    lists = []
    for k, seed in enumerate(seeds):
        n = sizes[min(k // per_size, len(sizes) - 1)]
        path = os.path.join(out, f"list-{seed}-{n}.csv")
        write_list(path, seed, n)
        lists.append(path)
    for fleet in a.fleet or FLEETS:
        gaps = {m: [] for m in MECHANISMS}
        seconds = []
        for path in lists:
            start = time.monotonic()
            run = subprocess.run([a.carve, "plan", path, "--fleet", fleet, "--json"],
                                 capture_output=True, text=True)
            seconds.append(time.monotonic() - start)
            # 1 with the plans: some workloads fit no GPU (listed); without: a failure
            if run.returncode not in (0, 1) or not run.stdout.strip():
                sys.exit(f"plan_sweep: carve plan {path} --fleet {fleet} exited "
                         f"{run.returncode}: {run.stderr.strip()}")
            for p in json.loads(run.stdout)["plans"]:
                if p["mechanism"] in gaps and p["gap_pct"] is not None:
                    gaps[p["mechanism"]].append(p["gap_pct"])
                    if a.each:
                        print(f"{path} {fleet} {p['mechanism']} ${p['cost_per_hour']:.2f} "
                              f"bound ${p['cost_lower_bound']:.2f} {p['gap_pct']:.3f}%")
        cells = ", ".join(f"{m} {sum(g) / max(len(g), 1):.2f}% ({sum(x > 2 for x in g)} above 2%)"
                          for m, g in gaps.items())
        print(f"{fleet}: {cells}; {sum(seconds) / len(seconds):.2f} s a list, "
              f"{max(seconds):.2f} s at most")


if __name__ == "__main__":
    main()
