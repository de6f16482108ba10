"""Time one attention call on variable-length sequences four ways (chapter 10): padded, per sequence, nested, packed.

Run: .venv/bin/python benchmarks/bench_padding.py [--n 32] [--median 64] [--sigma 0.8] [--repeats 20] [--threads 1 2]
(on a shared machine: taskset -c 0,1 .venv/bin/python benchmarks/bench_padding.py)

Same work as the chapter's step 2, bigger: N sequences with log-normal lengths (seeded), H heads of D dimensions,
bidirectional F.scaled_dot_product_attention (SDPA on a jagged nested tensor refuses is_causal=True on the CPU):
- padded: one (N, H, L_max, D) tensor with a key padding mask;
- per sequence: a Python loop, one SDPA call per sequence;
- nested: a jagged nested tensor (torch.nested, layout=torch.jagged);
- packed: rows of L_max slots filled first-fit (ch10.packed_rows), block-diagonal mask per row.
All four outputs are first checked equal (within 1e-5). Each is timed with warm-up calls, then the median of
`repeats` calls (ch10.median_ms). This is a measurement, not a test: it depends on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch
import torch.nn.functional as F

from helpers.chapters import ch10_packing_and_the_cost_of_padding as ch10  # chapter 10's code
from helpers.masks import key_padding_mask


def make_inputs(lengths: list[int], heads: int, dim: int) -> dict[str, object]:
    """The same sequences as a list, a padded tensor + mask, a jagged nested tensor, and packed rows + masks."""
    g = torch.Generator().manual_seed(0)
    seqs = [torch.randn(heads, n, dim, generator=g) for n in lengths]
    N, L_max = len(lengths), max(lengths)
    padded = torch.zeros(N, heads, L_max, dim)
    for i, s in enumerate(seqs):
        padded[i, :, : s.shape[1]] = s
    nested = torch.nested.nested_tensor([s.transpose(0, 1) for s in seqs], layout=torch.jagged).transpose(1, 2)
    rows = ch10.packed_rows(lengths, L_max)
    packed = torch.zeros(len(rows), heads, L_max, dim)
    row_mask = torch.zeros(len(rows), 1, L_max, L_max, dtype=torch.bool)
    where = {}
    for r, members in enumerate(rows):
        row = ch10.pack([lengths[i] for i in members])
        T = len(row.document)
        packed[r, :, :T] = torch.cat([seqs[i] for i in members], dim=1)
        row_mask[r, 0] = torch.eye(L_max, dtype=torch.bool)
        row_mask[r, 0, :T, :T] = ~ch10.document_mask(row.document, causal=False)
        offset = 0
        for i in members:
            where[i] = (r, offset)
            offset += lengths[i]
    return {"seqs": seqs, "padded": padded, "may_attend": ~key_padding_mask(lengths)[:, None, None, :],
            "nested": nested, "rows": rows, "packed": packed, "row_mask": row_mask, "where": where}


def runners(x: dict) -> dict:
    sdpa = F.scaled_dot_product_attention
    return {
        "padded": lambda: sdpa(x["padded"], x["padded"], x["padded"], attn_mask=x["may_attend"]),
        "per sequence": lambda: [sdpa(s, s, s) for s in x["seqs"]],
        "nested": lambda: sdpa(x["nested"], x["nested"], x["nested"]),
        "packed": lambda: sdpa(x["packed"], x["packed"], x["packed"], attn_mask=x["row_mask"]),
    }


def check_equal(lengths: list[int], x: dict, run: dict) -> float:
    """Largest |difference| of padded, nested and packed outputs from the per-sequence ones."""
    alone, padded, nested, packed = run["per sequence"](), run["padded"](), run["nested"]().unbind(), run["packed"]()
    worst = 0.0
    for i, n in enumerate(lengths):
        r, o = x["where"][i]
        for other in (padded[i, :, :n], nested[i], packed[r, :, o:o + n]):
            worst = max(worst, (other - alone[i]).abs().max().item())
    return worst


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=32, help="sequences per batch (default 32)")
    parser.add_argument("--median", type=float, default=64, help="median length (default 64)")
    parser.add_argument("--sigma", type=float, default=0.8, help="log-normal spread (default 0.8)")
    parser.add_argument("--max-len", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=32, help="dimensions per head (default 32)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors is in prototype stage")

    lengths = ch10.lognormal_lengths(args.n, args.median, args.sigma, args.max_len, args.seed)
    x = make_inputs(lengths, args.heads, args.dim)
    run = runners(x)
    worst = check_equal(lengths, x, run)
    assert worst < 1e-5, f"the four ways disagree by {worst:.2g}"
    padded_cost = ch10.padded_cost([lengths])
    packed_cost = ch10.packed_cost(ch10.pick(lengths, x["rows"]), max(lengths))
    print(f"torch {torch.__version__}, {args.n} sequences, log-normal median {args.median:g} sigma {args.sigma:g} "
          f"(seed {args.seed}): L_max {max(lengths)}, sum L {sum(lengths)}; {args.heads} heads x {args.dim} dims; "
          f"{len(x['rows'])} packed rows; outputs agree within {worst:.1g}")
    print(f"attention scores: padded N*L_max^2 = {padded_cost.computed_attention:,}, packed rows "
          f"{packed_cost.computed_attention:,}, useful sum L_i^2 = {padded_cost.useful_attention:,} "
          f"(padded wastes {padded_cost.wasted_attention:.1%})")
    print(f"{'threads':>7} {'way':>13} {'median ms':>10} {'vs padded':>10}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        times = {name: ch10.median_ms(fn, args.warmup, args.repeats) for name, fn in run.items()}
        for name, ms in times.items():
            print(f"{threads:>7} {name:>13} {ms:>10.2f} {times['padded'] / ms:>9.2f}x")
    load = os.getloadavg()
    print(f"(median of {args.repeats} calls after {args.warmup} warm-up; 'vs padded' > 1 means faster than padded; "
          f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs, "
          f"affinity {sorted(os.sched_getaffinity(0))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
