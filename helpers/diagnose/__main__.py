"""python -m helpers.diagnose: diagnose a model's masks from a shell (also the console script
attention-masks-diagnose). Exit code 0 = passed, 1 = findings, 2 = usage error.

  python -m helpers.diagnose --model-type llama                 # a tiny random Llama, built offline
  python -m helpers.diagnose --model-type bert --attn-implementation eager --json
  python -m helpers.diagnose --pretrained ./my-model            # a local folder (a hub name needs the network)
  python -m helpers.diagnose --module mypkg.layers:make_attention --expect causal
  python -m helpers.diagnose --list-model-types
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}
SWEEP = Path(__file__).resolve().parents[2] / "docs" / "diagnose-sweep.json"   # tools/sweep.py's table, if present


def parser() -> argparse.ArgumentParser:
    summary, _, details = (__doc__ or "").partition("\n")
    p = argparse.ArgumentParser(prog="python -m helpers.diagnose", description=summary,
                                epilog=details.strip("\n"), formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--model-type", metavar="NAME", help="a tiny random model of this transformers architecture")
    what.add_argument("--pretrained", metavar="NAME_OR_PATH", help="AutoModel.from_pretrained(NAME_OR_PATH)")
    what.add_argument("--module", metavar="PKG.MOD:FACTORY",
                      help="FACTORY() returns a module in the checks' convention attn(x, key_padding_mask, attn_mask)")
    what.add_argument("--list-model-types", action="store_true", help="the architectures --model-type can build")
    p.add_argument("--expect", choices=["causal", "bidirectional", "sliding_window"],
                   help="the mask the model must apply (default: what its config or is_causal declares)")
    p.add_argument("--window", type=int, help="with --expect sliding_window: keys each query sees, itself included")
    p.add_argument("--length", type=int, help="the longest padded length tried (default 16)")
    p.add_argument("--embed-dim", type=int, help="for --module: the size E of x (default: its embed_dim)")
    p.add_argument("--dtype", choices=list(DTYPES), help="build the model in this dtype (default float32)")
    p.add_argument("--attn-implementation", default="sdpa", help="for --model-type/--pretrained: sdpa (default), "
                   "eager, ...")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the Diagnosis as JSON (Diagnosis.to_dict())")
    return p


def list_model_types() -> list[str]:
    """The candidates, each with what the committed sweep measured for it (if it was run)."""
    from helpers.diagnose import hf

    measured = {}
    if SWEEP.is_file():
        measured = {(row["model_type"]): row for row in json.loads(SWEEP.read_text(encoding="utf-8"))["rows"]}
    lines = []
    for kind in hf.model_types():
        row = measured.get(kind)
        status = "not in the sweep" if row is None else "builds" if row.get("built") else \
            f"cannot be built: {row.get('error', '')}"
        lines.append(f"{kind}\t{status}")
    return lines


def load(args: argparse.Namespace, progress) -> object:
    """The model the arguments name."""
    dtype = DTYPES[args.dtype] if args.dtype else None
    if args.model_type:
        from helpers.diagnose import hf

        progress(f"building a tiny random {args.model_type} ({args.attn_implementation})")
        return hf.tiny_model(args.model_type, args.attn_implementation, dtype)
    if args.pretrained:
        import transformers

        progress(f"loading {args.pretrained}")
        try:
            return transformers.AutoModel.from_pretrained(
                args.pretrained, attn_implementation=args.attn_implementation,
                **({"dtype": dtype} if dtype is not None else {})).eval()
        except OSError as error:
            local = Path(args.pretrained).exists()
            raise SystemExit(f"--pretrained {args.pretrained}: could not load it ({error}). "
                             + ("" if local else "A hub name needs the network (huggingface.co): download the model "
                                "where there is one, then pass its local folder.")) from None
    module_name, _, factory = args.module.partition(":")
    if not module_name or not factory:
        raise SystemExit(f"--module must be PKG.MOD:FACTORY, got {args.module!r}")
    sys.path.insert(0, str(Path.cwd()))
    made = getattr(importlib.import_module(module_name), factory)()
    if dtype is not None and isinstance(made, torch.nn.Module):
        made = made.to(dtype)
    return made


def main(argv: list[str] | None = None) -> int:
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exit_:
        return 2 if exit_.code else 0
    if args.list_model_types:
        print("\n".join(list_model_types()))
        return 0
    started = time.perf_counter()

    def progress(text: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f} s] {text}", file=sys.stderr, flush=True)

    from helpers.diagnose import diagnose

    try:
        model = load(args, progress)
        progress("running the checks")
        found = diagnose(model, expect=args.expect, window=args.window, length=args.length,
                         embed_dim=args.embed_dim, seed=args.seed)
    except SystemExit as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    progress("done")
    print(found.to_json() if args.json else found)
    return 0 if found.passed else 1


def console() -> None:
    """The console script attention-masks-diagnose."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
