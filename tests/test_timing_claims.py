"""Every timing the READMEs and docs state has a benchmark record behind it (benchmarks/results.py says how).

A duration in README.md, README.ja.md, docs/*.md or the pages of notebooks/ ("50 s", "9 min 54 s", "about a
minute", "5 分半", "約 50 秒") must sit on a line that cites a record of benchmarks/results.json with
`<!-- timing: KEY -->`, match the record's figure within results.TOLERANCE and show its date and cores; or the
line (or its block) must say why it is no measurement, `<!-- not a timing: REASON -->` (a lesson plan, a budget,
a timeout).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tools import series

ROOT = series.ROOT
sys.path.insert(0, str(ROOT / "benchmarks"))
import results  # noqa: E402  (benchmarks/results.py)

# Files a tool writes from its own run, with the run's wall time and timeouts in them: rewritten by every run,
# so a marker would not survive. Each must say which tool made it.
GENERATED = {"docs/diagnose-sweep.md": "Made by `python -m tools.sweep`"}

NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
UNITS = {"ms": 0.001, "s": 1, "sec": 1, "second": 1, "seconds": 1, "秒": 1, "min": 60, "minute": 60,
         "minutes": 60, "分": 60, "分半": 60, "hour": 3600, "hours": 3600, "時間": 3600}
UNIT = r"(?:ms|seconds?|sec|s|minutes?|min|hours?|秒|分半|分(?![割布岐類析母子散野離担け])|時間)"
ONE = rf"(?<![\w.,/+-])({NUM})\s?({UNIT})(?![A-Za-z])"
DURATION = re.compile(rf"(?:(?<![\w.,/+-])({NUM})\s?[–-]\s?)?{ONE}(?:\s?{ONE})*")
PART = re.compile(ONE)
WORDS = {"a": (1, 1), "an": (1, 1), "one": (1, 1), "half a": (0.5, 0.5), "a few": (2, 9), "several": (2, 9),
         "数": (2, 9)}
WORDED = re.compile(r"(?<![\w])(half a|a few|several|an|a|one) (ms|seconds?|minutes?|hours?)\b|(数)\s?(秒|分|時間)")
MARK = re.compile(r"<!--\s*timing:\s*([\w.\-]+)\s*-->")
NOT = re.compile(r"<!--\s*not a timing:\s*(\S[^>]*?)\s*-->")
END = re.compile(r"<!--\s*end not a timing\s*-->")
COMMENT = re.compile(r"<!--.*?-->")


def documents() -> list[Path]:
    notebooks = series.notebooks("en")
    pages = [*notebooks.glob("*.md"), *series.notebooks("ja").glob("*.md")]
    return [ROOT / "README.md", ROOT / "README.ja.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(pages)]


def durations(line: str) -> list[tuple[str, float, float]]:
    """(text, low, high) seconds of every duration on a line, HTML comments left out."""
    text = COMMENT.sub(" ", line)
    found = []
    for match in DURATION.finditer(text):
        total = sum(float(n.replace(",", "")) * UNITS[u] + (30 if u == "分半" else 0)
                    for n, u in PART.findall(match[0]))
        low = total
        if match[1]:  # a range, "21–62 s": the first number in the unit of the first part
            first_unit = PART.search(match[0])[2]
            low = float(match[1].replace(",", "")) * UNITS[first_unit]
        found.append((match[0], low, total))
    for match in WORDED.finditer(text):
        word, unit = (match[1], match[2]) if match[1] else (match[3], match[4])
        scale = UNITS.get(unit, UNITS.get(unit.rstrip("s"), 1))
        low, high = WORDS[word]
        found.append((match[0], low * scale, high * scale))
    return found


def claims(path: Path) -> list[tuple[int, str, list[str], str]]:
    """(line number, line, the records it cites, why it is no measurement or '') of every line with a duration."""
    found, block = [], ""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if END.search(line):
            block = ""
            continue
        reason = NOT.search(line)
        if reason and not COMMENT.sub("", line).strip():   # a marker alone on its line opens a block
            block = reason[1]
            continue
        if durations(line):
            found.append((number, line, MARK.findall(line), reason[1] if reason else block))
    return found


def cited(line: str, found: tuple[str, float, float], records: dict[str, dict], keys: list[str]) -> str:
    """'' if a cited record backs the duration, else what is wrong."""
    text, low, high = found
    for key in keys:
        seconds = records[key]["seconds"]
        if low * (1 - results.TOLERANCE) <= seconds <= high * (1 + results.TOLERANCE):
            return ""
    return f"{text!r} matches none of {[(k, records[k]['seconds']) for k in keys]} (tolerance {results.TOLERANCE})"


def test_every_timing_claim_has_a_benchmark_record():
    records = results.load()
    problems = []
    for path in documents():
        name = path.relative_to(ROOT).as_posix()
        if name in GENERATED:
            assert GENERATED[name] in path.read_text(encoding="utf-8"), f"{name}: not the generated file it was"
            continue
        for number, line, keys, reason in claims(path):
            where = f"{name}:{number}"
            unknown = [key for key in keys if key not in records]
            if unknown:
                problems.append(f"{where}: no record {unknown} in benchmarks/results.json")
                continue
            if keys:
                for found in durations(line):
                    if wrong := cited(line, found, records, keys):
                        problems.append(f"{where}: {wrong}")
                for key in keys:
                    entry = records[key]
                    if entry["date"] not in line:
                        problems.append(f"{where}: state the date of {key}, {entry['date']}")
                    if not re.search(rf"\b{entry['cores']}(?: |-)(?:cores?|コア)", line):
                        problems.append(f"{where}: state the machine of {key}, {entry['cores']} cores")
            elif not reason:
                shown = ", ".join(text for text, _, _ in durations(line))
                problems.append(f"{where}: {shown}: cite a record (<!-- timing: KEY -->, benchmarks/results.py) "
                                "or say why it is no measurement (<!-- not a timing: REASON -->)")
    assert not problems, "timing claims without a benchmark behind them:\n" + "\n".join(problems)


def test_every_record_says_what_when_where_and_how():
    for key, entry in results.load().items():
        assert set(results.FIELDS) <= set(entry), f"{key}: needs {results.FIELDS}"
        assert entry["seconds"] > 0 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["date"]), key
        assert f"{entry['cores']} cores" in entry["machine"], key
        script = entry["script"].split()[0]
        assert script.startswith(("benchmarks/", "tools/")) and (ROOT / script).is_file(), f"{key}: {script}"


@pytest.mark.parametrize(("line", "expected"), [
    ("make test took 9 min 54 s", [(594, 594)]),
    ("about 5.5 minutes on 2 cores", [(330, 330)]),
    ("make unit: 21–62 s depending on load", [(21, 62)]),
    ("約 50 秒", [(50, 50)]), ("2 コアで約 5 分半", [(330, 330)]), ("9 分 54 秒", [(594, 594)]),
    ("A full build takes about a minute", [(60, 60)]), ("an update takes a few ms", [(0.002, 0.009)]),
    ("1,437 s to 796 s", [(1437, 1437), (796, 796)]),
    ("2 × 45 min", [(2700, 2700)]),
    ("10 steps, 3 exercises, 1280 × 720, Python 3.11, 1 章分の確認, 2 分割, 200 MB", []),
    ("<!-- not a timing: 5 s -->", []),
])
def test_durations_are_found(line: str, expected: list[tuple[float, float]]):
    assert [(round(low, 3), round(high, 3)) for _, low, high in durations(line)] == expected


def test_an_unbacked_claim_fails(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("make unit takes about 50 s.\n"
                    "<!-- not a timing: a lesson plan -->\n| 1 | 45 min |\n<!-- end not a timing -->\n"
                    "a 15 s budget <!-- not a timing: a budget -->\n")
    (first, line, keys, reason), *rest = claims(page)
    assert (first, keys, reason) == (1, [], "")
    assert [(n, r) for n, _, _, r in rest] == [(3, "a lesson plan"), (5, "a budget")]
    records = {"unit": {"seconds": 120.0}}
    assert cited(line, durations(line)[0], records, ["unit"]).startswith("'50 s' matches none")
    assert cited(line, durations(line)[0], {"unit": {"seconds": 55.0}}, ["unit"]) == ""


def test_record_refuses_bad_input(tmp_path: Path):
    with pytest.raises(ValueError, match="seconds"):
        results.record("x", "what", -1, "benchmarks/bench_suite.py", path=tmp_path / "r.json")
    with pytest.raises(ValueError, match="key"):
        results.record("", "what", 1, "benchmarks/bench_suite.py", path=tmp_path / "r.json")
    entry = results.record("x", "what", 12.34, "benchmarks/bench_suite.py", path=tmp_path / "r.json")
    assert entry["seconds"] == 12.3 and f"{entry['cores']} cores" in entry["machine"]
    assert results.load(tmp_path / "r.json") == {"x": entry}
