"""How far correct low-precision modules drift by rounding alone: the numbers behind helpers.checks' dtype defaults.

Run: .venv/bin/python benchmarks/bench_check_tolerances.py [--seeds 5]

For each correct module (nn.MultiheadAttention, nn.TransformerEncoderLayer post- and pre-norm, a tiny Hugging
Face Llama if transformers is installed) cast to bfloat16 and float16, each check runs at atol = rtol = t for t
on a grid: printed per dtype and check, the smallest t at which every module and seed passes, and how far the
default (helpers.checks.core.LOW_PRECISION) sits above it. Then the same modules with their padding mask taken
away must fail the padding check at the defaults.
A measurement, not a test (tests/test_checks_dtypes.py tests the verdicts).
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.checks import (  # noqa: E402
    LOW_PRECISION,
    check_gradient_padding_invariance,
    check_no_future_leak,
    check_padding_invariance,
)

E = 8


def modules(dtype: torch.dtype) -> dict[str, tuple[object, list[torch.Tensor]]]:
    """Correct modules in the checks' adapter convention, computing in dtype: name -> (attn, parameters)."""
    made: dict[str, tuple[object, list[torch.Tensor]]] = {}
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(E, 2, batch_first=True).to(dtype)
    made["MultiheadAttention"] = (lambda x, kpm, am: mha(*(x.to(dtype),) * 3, key_padding_mask=kpm, attn_mask=am,
                                                         need_weights=False)[0], list(mha.parameters()))
    for norm_first in (False, True):
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(E, 2, 16, dropout=0.0, batch_first=True, norm_first=norm_first).to(dtype)
        made[f"TransformerEncoderLayer norm_first={norm_first}"] = (
            lambda x, kpm, am, layer=layer: layer(x.to(dtype), src_mask=am, src_key_padding_mask=kpm),
            list(layer.parameters()))
    try:
        import transformers
    except ModuleNotFoundError:
        return made
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=10, hidden_size=E, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, head_dim=4,
                                      max_position_embeddings=32, attn_implementation="eager")
    llama = transformers.LlamaModel(config).to(dtype).eval()

    def hf(x, key_padding_mask, attn_mask, position_ids):
        return llama(inputs_embeds=x.to(dtype), attention_mask=(~key_padding_mask).long(),
                     position_ids=position_ids).last_hidden_state
    made["Llama (eager, causal by itself)"] = (hf, list(llama.parameters()))
    return made


GRID = (5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1, 2e-1, 5e-1, 1.0, math.inf)


CHECKS = ("outputs (padding)", "outputs (future)", "gradients")


def passes(check: str, attn: object, params: list[torch.Tensor], tolerance: float, seed: int) -> bool:
    """One check of one correct module at atol = rtol = tolerance."""
    if check == "outputs (padding)":
        report = check_padding_invariance(attn, embed_dim=E, causal=True, atol=tolerance, rtol=tolerance, seed=seed)
    elif check == "outputs (future)":
        report = check_no_future_leak(attn, embed_dim=E, atol=tolerance, rtol=tolerance, seed=seed)
    else:
        report = check_gradient_padding_invariance(attn, parameters=params, embed_dim=E, causal=True,
                                                   atol=tolerance, rtol=tolerance, seed=seed)
    return report.passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    for dtype in LOW_PRECISION:
        made = modules(dtype)
        smallest: dict[str, float] = {}
        for name, (attn, params) in made.items():   # the smallest atol = rtol of the grid at which each passes
            for seed in range(args.seeds):
                for check in CHECKS:
                    for tolerance in GRID[:-1]:
                        if passes(check, attn, params, tolerance, seed):
                            break
                    else:
                        tolerance = math.inf
                    smallest[check] = max(smallest.get(check, 0.0), tolerance)
                    smallest[f"{check}, {name}"] = max(smallest.get(f"{check}, {name}", 0.0), tolerance)
        (outputs, gradients) = LOW_PRECISION[dtype]
        print(f"{dtype} (eps {torch.finfo(dtype).eps:.3g}), {len(made)} correct modules x {args.seeds} seeds:")
        for check, needed in smallest.items():
            default = (gradients if check.startswith("gradients") else outputs)[0]
            print(f"  {check:60s} every run passes from atol = rtol = {needed:g}; default {default:g} "
                  f"({default / needed:.1f} x)")
        broken = {}
        for name, (attn, _) in made.items():
            def ignores_padding(x, kpm, am, position_ids, attn=attn):
                rest = (position_ids,) if "position_ids" in inspect.signature(attn).parameters else ()
                return attn(x, kpm & False, am, *rest)
            broken[name] = not check_padding_invariance(ignores_padding, embed_dim=E).passed
        print(f"  with the defaults, a module that ignores its padding mask fails: {sum(broken.values())} of "
              f"{len(broken)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
