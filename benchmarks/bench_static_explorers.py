"""Time the static explorers' export (helpers/static_explorer.py) per chapter and weigh the files.

Run: .venv/bin/python benchmarks/bench_static_explorers.py [CHAPTER ...] [--json results.json]

For each chapter with explorers: the settings precomputed, the distinct views among them, the export's wall
time and its time per setting, the file's size against BUDGET_BYTES, and what deduplication and gzip save
(the views' HTML as the live explorer produces it, summed over every setting, against the file).
This is a measurement, not a test: the times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import torch

from helpers import chapters
from helpers import static_explorer as se


def measure(chapter: str, out: Path) -> dict:
    result = se.export_chapter(chapter, out)
    raw = 0
    for data in se.read_payloads(result.path):
        for entry in data["grid"]:
            summary, *parts = data["entries"][entry]
            raw += len(data["pieces"][summary].encode()) + sum(len(data["pieces"][p].encode()) for p in parts)
    return {"settings": result.settings, "distinct": result.distinct, "seconds": result.seconds,
            "ms_per_setting": 1000 * result.seconds / result.settings, "bytes": result.bytes, "raw_bytes": raw}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    wanted = [c.zfill(2) for c in args.chapters] or [c for c in chapters.chapters() if chapters.explorers(c)]
    results = {}
    print(f"{'chapter':<7} {'settings':>8} {'distinct':>8} {'s':>6} {'ms/set':>6} {'KB':>6} {'raw KB':>8} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for chapter in wanted:
            r = results[chapter] = measure(chapter, Path(tmp))
            print(f"{chapter:<7} {r['settings']:>8} {r['distinct']:>8} {r['seconds']:>6.2f} "
                  f"{r['ms_per_setting']:>6.2f} {r['bytes'] / 1000:>6.1f} "
                  f"{r['raw_bytes'] / 1000:>8.0f} {r['raw_bytes'] / r['bytes']:>6.0f}")
    total = sum(r["seconds"] for r in results.values())
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"total {total:.1f} s; budget {se.BUDGET_BYTES / 1000:.0f} KB per file; raw KB = every setting's view "
          f"HTML as the live explorer makes it, ratio = raw / file; load average {load:.2f} on {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
