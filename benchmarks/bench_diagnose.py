"""How long helpers.diagnose takes: on plain modules and on tiny transformers models (every check). A measurement,
not a test.

Run: .venv/bin/python benchmarks/bench_diagnose.py [--repeats 3] [--threads 1]
Printed: for each model, the median seconds of `repeats` runs of diagnose (the model built before timing), and
the seconds to build the tiny model. The budgets (issue #34): at most 3 s on a plain module and at most 10 s on a
tiny transformers model, on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from torch import nn  # noqa: E402

from helpers.diagnose import diagnose, hf  # noqa: E402
from helpers.masks import causal_mask  # noqa: E402

KINDS = ("gpt2", "llama", "mistral", "bert", "t5", "bart")


def timed(model: object, repeats: int, **kwargs: object) -> tuple[float, bool]:
    seconds, passed = [], True
    for _ in range(repeats):
        start = time.perf_counter()
        passed = diagnose(model, **kwargs).passed
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} CPUs; medians of {args.repeats}")
    torch.manual_seed(0)
    plain = {
        "nn.MultiheadAttention, expect bidirectional": (nn.MultiheadAttention(8, 2, batch_first=True).eval(),
                                                        {"expect": "bidirectional"}),
        "nn.MultiheadAttention, causal attn_mask": (nn.MultiheadAttention(8, 2, batch_first=True).eval(),
                                                    {"expect": "causal", "attn_mask": causal_mask(16)}),
        "nn.TransformerEncoderLayer": (nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval(),
                                       {"expect": "bidirectional"}),
    }
    diagnose(*plain["nn.MultiheadAttention, expect bidirectional"][:1], expect="bidirectional")   # warm-up
    for name, (model, kwargs) in plain.items():
        seconds, passed = timed(model, args.repeats, **kwargs)
        print(f"  {seconds:5.2f} s  {name} ({'passed' if passed else 'findings'})")
    for kind in KINDS:
        for implementation in ("sdpa", "eager"):
            start = time.perf_counter()
            model = hf.tiny_model(kind, implementation)
            built = time.perf_counter() - start
            seconds, passed = timed(model, args.repeats)
            print(f"  {seconds:5.2f} s  {kind} {implementation} (built in {built:.2f} s; "
                  f"{'passed' if passed else 'findings'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
