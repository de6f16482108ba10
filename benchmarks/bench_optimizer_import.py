"""Which part of a torch.optim optimizer imports torch.compile's machinery (torch._dynamo), and what it costs.

Run: .venv/bin/python benchmarks/bench_optimizer_import.py [--repeats 3]

Each repeat runs a fresh Python process that imports torch, then times three things: creating
torch.optim.Adam(params), its first step, and its second step, and records after each whether torch._dynamo
has been imported. Why it matters: chapters 8 and 9 train with helpers.training.Adam, torch.optim.Adam's
update written out, because the import costs more than their trainings. A measurement, not a test: the
seconds depend on the machine and its load (printed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

PROBE = r"""
import json, sys, time
import torch
params = [torch.nn.Parameter(torch.randn(32, 32))]
loaded = lambda: "torch._dynamo" in sys.modules
out = {"after import torch": loaded()}
start = time.perf_counter()
optimizer = torch.optim.Adam(params, lr=1e-3)
out["constructor s"], out["after the constructor"] = time.perf_counter() - start, loaded()
for step in ("first", "second"):
    params[0].grad = torch.randn(32, 32)
    start = time.perf_counter()
    optimizer.step()
    out[f"{step} step s"], out[f"after the {step} step"] = time.perf_counter() - start, loaded()
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    runs = [json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(args.repeats)]
    print(f"torch {__import__('torch').__version__}; {args.repeats} fresh processes; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for key in runs[0]:
        values = [run[key] for run in runs]
        if key.endswith(" s"):
            print(f"  {key[:-2]:<24} median {statistics.median(values):.3f} s  (runs: "
                  f"{', '.join(f'{v:.3f}' for v in values)})")
        else:
            print(f"  torch._dynamo imported {key}: {sorted(set(values))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
