"""The one place a timing the documentation states comes from: benchmarks/results.json.

Each record is one measurement by a script in benchmarks/: what was timed, the figure in seconds, the date, the
machine (its CPU cores, model and load average at the time) and the command that took it. A benchmark writes
its record with `record(...)` when it runs with `--record KEY` (bench_suite.py does); a figure measured
otherwise by one of these scripts (a run on another machine, reported with its date) is entered by hand with
its `note` saying so.

The documentation cites a record where it states a timing: README.md, README.ja.md, docs/*.md and the pages of
notebooks/ write the figure with the record's cores and date, and the marker `<!-- timing: KEY -->` after it
(invisible when rendered). tests/test_timing_claims.py finds every duration in those files ("50 s",
"9 min 54 s", "about a minute", "5 分半", "約 50 秒", ...) and fails unless its line cites a record whose
figure it matches within TOLERANCE and whose date it shows, or is marked as no measurement at all (a lesson
plan's minutes, a budget, a timeout) with `<!-- not a timing: REASON -->` on the line, or, for a block of
lines, on a line of its own before them and `<!-- end not a timing -->` after them.

    python benchmarks/results.py        # the records, one a line
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import sys
from pathlib import Path

RESULTS = Path(__file__).with_name("results.json")
TOLERANCE = 0.2  # a stated figure ("about 10 minutes") within 20 % of the record's
FIELDS = ("what", "seconds", "date", "machine", "cores", "script")


def load(path: Path = RESULTS) -> dict[str, dict]:
    """key -> record (every field of FIELDS, and maybe a note)."""
    return json.loads(path.read_text(encoding="utf-8"))["records"]


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def machine() -> str:
    """This machine as a record states it: cores, CPU model, load average when the measurement ended."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{cores()} cores, {model}, {platform.system()}{load}"


def record(key: str, what: str, seconds: float, script: str, note: str = "", path: Path = RESULTS) -> dict:
    """Write (or replace) the record `key` with today's date and this machine; returns it."""
    if not isinstance(key, str) or not key.strip() or "-->" in key:
        raise ValueError(f"key must be a non-empty name, got {key!r}")
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(f"seconds must be a positive number, got {seconds!r}")
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"records": {}}
    entry = {"what": what, "seconds": round(float(seconds), 1), "date": datetime.date.today().isoformat(),
             "machine": machine(), "cores": cores(), "script": script}
    if note:
        entry["note"] = note
    data["records"][key] = entry
    data["records"] = dict(sorted(data["records"].items()))
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return entry


if __name__ == "__main__":
    for key, entry in load().items():
        print(f"{key}: {entry['seconds']} s, {entry['date']}, {entry['machine']} ({entry['script']})")
    sys.exit(0)
