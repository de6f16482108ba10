"""Run helpers.diagnose on every transformers architecture that --model-type can build, sdpa and eager: a table.

Run: .venv/bin/python -m tools.sweep [--jobs 2] [--only gpt2 llama ...] [--timeout 120]
Writes docs/diagnose-sweep.md (the table, for people) and docs/diagnose-sweep.json (for --list-model-types and
tests), one row per architecture and attention implementation: built or not (and why not), passed, the finding
codes, seconds. Each architecture runs in a worker process (a pool of --jobs), so that one that hangs is stopped
after --timeout seconds (25) and one that crashes the interpreter takes no other with it. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from tools import series

OUT = series.ROOT / "docs" / "diagnose-sweep"
IMPLEMENTATIONS = ("sdpa", "eager")


def one(kind: str) -> list[dict]:
    """Both attention implementations of one architecture (in a worker process)."""
    import torch

    from helpers.diagnose import diagnose, hf

    torch.set_num_threads(1)
    rows = []
    for implementation in IMPLEMENTATIONS:
        row: dict = {"model_type": kind, "attn_implementation": implementation}
        start = time.perf_counter()
        try:
            model = hf.tiny_model(kind, implementation)
        except Exception as error:   # noqa: BLE001  (a table of why each could not be built)
            row.update(built=False, error=f"{type(error).__name__}: {str(error).splitlines()[0][:160]}")
            rows.append(row)
            continue
        try:
            found = diagnose(model)
            errors = [r for r in found.ran if r.outcome.startswith("error")]
            row.update(built=True, passed=found.passed and not errors, codes=found.codes,
                       errors=[f"{r.where}, {r.check}: {r.outcome[7:][:160]}" for r in errors],
                       expectations=[f"{w}: {e} ({s})" for w, e, s in found.expectations],
                       findings=[f"[{f.code}] {f.where}: {f.message[:300]}" for f in found.findings])
        except Exception as error:   # noqa: BLE001
            row.update(built=True, passed=False, codes=[], crashed=f"{type(error).__name__}: "
                       f"{str(error).splitlines()[0][:200] if str(error) else ''}")
        row["seconds"] = round(time.perf_counter() - start, 1)
        rows.append(row)
    return rows


def sweep(kinds: list[str], jobs: int, timeout: float, log: Path | None = None) -> list[dict]:
    """Every architecture's rows; each architecture's also appended to `log` (JSON lines) as it finishes."""
    rows: list[dict] = []
    pending = list(kinds)
    started = time.perf_counter()
    while pending:
        with multiprocessing.get_context("spawn").Pool(jobs, maxtasksperchild=20) as pool:
            running = {kind: pool.apply_async(one, (kind,)) for kind in pending}
            restart = False
            for kind, result in running.items():
                if kind not in pending:
                    continue
                try:
                    rows += result.get(timeout=timeout)
                except multiprocessing.TimeoutError:
                    rows += [{"model_type": kind, "attn_implementation": i, "built": False,
                              "error": f"timed out after {timeout:.0f} s"} for i in IMPLEMENTATIONS]
                    restart = True
                except Exception as error:   # noqa: BLE001  (the worker died)
                    rows += [{"model_type": kind, "attn_implementation": i, "built": False,
                              "error": f"worker failed: {type(error).__name__}: {error}"} for i in IMPLEMENTATIONS]
                pending.remove(kind)
                if log is not None:
                    with log.open("a", encoding="utf-8") as out:
                        out.write("".join(json.dumps(r) + "\n" for r in rows if r["model_type"] == kind))
                done = len(kinds) - len(pending)
                print(f"\r[{time.perf_counter() - started:6.0f} s] {done}/{len(kinds)} {kind:<30}", end="",
                      file=sys.stderr, flush=True)
                if restart:   # a hung worker: start a fresh pool for the rest
                    pool.terminate()
                    break
    print(file=sys.stderr)
    return sorted(rows, key=lambda r: (r["model_type"], r["attn_implementation"]))


def markdown(rows: list[dict], meta: dict) -> str:
    built = [r for r in rows if r.get("built")]
    lines = [
        "# helpers.diagnose on transformers' architectures",
        "",
        f"Made by `python -m tools.sweep` (transformers {meta['transformers']}, torch {meta['torch']}, "
        f"{meta['seconds']:.0f} s on {meta['jobs']} workers): every architecture with a base model listed as a "
        "causal, masked or sequence-to-sequence LM, built as a tiny random model from its config class "
        "(`helpers.diagnose.hf.tiny_model`), under sdpa and eager attention. Findings are explained in "
        "[diagnose-findings.md](diagnose-findings.md).",
        "",
        *([f"Run again after a fix to diagnose (`--merge`): {', '.join(meta['rerun'])}.", ""] if meta.get("rerun")
          else []),
        f"{len({r['model_type'] for r in rows})} architectures, {len(rows)} runs: {len(built)} built, "
        f"{sum(bool(r.get('passed')) for r in built)} passed, "
        f"{sum(not r.get('passed') for r in built)} with findings or errors, {len(rows) - len(built)} not built.",
        "",
        "| architecture | attention | built | passed | findings | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        if not r.get("built"):
            lines.append(f"| {r['model_type']} | {r['attn_implementation']} | no: {r['error'].replace('|', '/')} "
                         "| | | |")
            continue
        codes = ", ".join(r.get("codes", [])) + (f" crashed: {r['crashed']}" if r.get("crashed") else "") + \
            ("; errors: " + "; ".join(r["errors"]) if r.get("errors") else "")
        lines.append(f"| {r['model_type']} | {r['attn_implementation']} | yes | {'yes' if r.get('passed') else 'no'} "
                     f"| {codes.replace('|', '/')} | {r.get('seconds', '')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=max(1, min(os.cpu_count() or 1, 8)))
    parser.add_argument("--only", nargs="*", help="these architectures (default: all of --list-model-types)")
    parser.add_argument("--timeout", type=float, default=25.0, help="seconds per architecture (both runs)")
    parser.add_argument("--out", type=Path, default=OUT, help="the table's path without suffix (.md and .json)")
    parser.add_argument("--merge", action="store_true", help="with --only: run those again and replace their rows in "
                        "the existing table (after a fix to diagnose), which then says so")
    args = parser.parse_args(argv)
    import torch
    import transformers

    from helpers.diagnose import hf

    kinds = args.only or hf.model_types()
    start = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = args.out.with_suffix(".log.jsonl")
    log.unlink(missing_ok=True)
    rows = sweep(kinds, args.jobs, args.timeout, log)
    log.unlink()
    meta = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0], "jobs": args.jobs,
            "seconds": time.perf_counter() - start}
    if args.merge:
        if not args.only:
            parser.error("--merge needs --only (the architectures to run again)")
        table = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
        rows = sorted([r for r in table["rows"] if r["model_type"] not in kinds] + rows,
                      key=lambda r: (r["model_type"], r["attn_implementation"]))
        meta = {**table["meta"], "rerun": sorted({*table["meta"].get("rerun", []), *kinds})}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n",
                                             encoding="utf-8")
    args.out.with_suffix(".md").write_text(markdown(rows, meta), encoding="utf-8")
    print(f"{len(rows)} runs in {meta['seconds']:.0f} s: {args.out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
