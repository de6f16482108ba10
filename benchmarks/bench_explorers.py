"""Time one explorer update (compute plus redraw) for every explorer the chapters list (helpers.chapters).

Run: .venv/bin/python benchmarks/bench_explorers.py [--n 60] [--chapter 16] [--json results.json]

The updates run inside a real IPython kernel (started here with jupyter_client), as in JupyterLab:
the explorer computes its View, renders it as HTML tables (helpers.explorer.view_html) and sets
the value of its HTML widgets, which goes out on the kernel's iopub socket. For each explorer that
a chapter module lists in EXPLORERS (helpers.chapters.explorers), the script detaches the controls'
observers, then N times: sets one control to its next value (cycling through the controls and their
values), times box.refresh() (wall and CPU time, and the part spent in view_html), and records whether
that combination drew tables or showed the "Not possible" message.
It prints the median and 90th percentile ms per update; the target is a median under 50 ms.
The browser's side (control moved -> new tables in the page) is recorded by the browser tests in
test-artifacts/browser/update_ms.json.
This is a measurement, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from jupyter_client.manager import start_new_kernel

TARGET_MS = 50.0
MARK = "BENCH-RESULT:"

KERNEL_CODE = r'''
import json, statistics, time
import ipywidgets as widgets
import helpers.explorer as wiring
from helpers import chapters


def _next_values(control):
    """The values a learner can pick, starting after the current one (wrapping round)."""
    if isinstance(control, widgets.Checkbox):
        values = [not control.value, control.value]
    elif hasattr(control, "options"):
        values = [value for _, value in control._options_labels_values()] if hasattr(
            control, "_options_labels_values") else list(control._options_values)
    elif isinstance(control, (widgets.IntSlider, widgets.FloatSlider)):
        values, v = [], control.min
        while v <= control.max and len(values) < 50:
            values.append(v)
            v += control.step
    else:
        raise TypeError(f"benchmark cannot move a {type(control).__name__}")
    if control.value in values and len(values) > 1:
        i = values.index(control.value)
        values = values[i + 1:] + values[:i + 1]
    return values


def _explorers():
    for chapter in chapters.chapters():
        if CHAPTER is not None and chapter != CHAPTER:
            continue
        for make in chapters.explorers(chapter):
            yield f"{chapter} {make.__name__}", make


_render = []  # seconds spent in view_html (the HTML tables) during the current update


def _timed_view_html(view, _original=wiring.view_html):
    start = time.perf_counter()
    try:
        return _original(view)
    finally:
        _render.append(time.perf_counter() - start)


wiring.view_html = _timed_view_html  # explorer() looks it up at each update


def _bench(n):
    results = {}
    for name, make in _explorers():
        box = make()
        summary = box.summary
        controls = list(box.controls.values())
        for control in controls:  # the benchmark triggers each redraw itself, through box.refresh()
            control.unobserve(box.refresh, names="value")
        plans = [(c, _next_values(c)) for c in controls]
        drawn, refused, cpu, render = [], [], [], []
        for i in range(n + 3):
            control, values = plans[i % len(plans)]
            control.value = values[(i // len(plans)) % len(values)]
            _render.clear()
            start, start_cpu = time.perf_counter(), time.process_time()
            box.refresh()
            elapsed, elapsed_cpu = (time.perf_counter() - start) * 1000, (time.process_time() - start_cpu) * 1000
            if i < 3:
                continue  # warm-up: first calls fill caches
            if summary.value.startswith(wiring.REFUSED):
                refused.append(elapsed)
            else:
                drawn.append(elapsed)
                cpu.append(elapsed_cpu)
                render.append(sum(_render) * 1000)
        results[name] = {
            "controls": [c.description for c in controls],
            "n_drawn": len(drawn), "n_refused": len(refused),
            "median_ms": statistics.median(drawn) if drawn else None,
            "cpu_median_ms": statistics.median(cpu) if cpu else None,
            "render_median_ms": statistics.median(render) if render else None,
            "p90_ms": statistics.quantiles(drawn, n=10)[-1] if len(drawn) > 1 else None,
            "max_ms": max(drawn) if drawn else None,
            "refused_median_ms": statistics.median(refused) if refused else None,
        }
        box.close()
    return results


print("BENCH-RESULT:" + json.dumps(_bench(N)))
'''


def run(n: int, chapter: str | None = None) -> dict:
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(Path(__file__).resolve().parents[1]))
    lines: list[str] = []

    def hook(message: dict) -> None:
        content = message["content"]
        if message["msg_type"] == "stream":
            lines.append(content["text"])
        elif message["msg_type"] == "error":
            lines.append("\n".join(content["traceback"]))

    try:
        reply = kc.execute_interactive(f"N = {n}\nCHAPTER = {chapter!r}\n" + KERNEL_CODE, output_hook=hook, timeout=900)
        text = "".join(lines)
        if reply["content"]["status"] != "ok" or MARK not in text:
            raise RuntimeError(f"the benchmark failed in the kernel:\n{text}")
        return json.loads(text.split(MARK, 1)[1].strip().splitlines()[0])
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def report(results: dict) -> str:
    rows = [f"{'explorer':<29} {'median ms':>9} {'render':>6} {'cpu ms':>6} {'p90 ms':>6} {'max ms':>6} {'drawn':>5}"
            f" {'refused':>7}  under {TARGET_MS:g} ms?"]
    for name, r in results.items():
        med = r["median_ms"]
        rows.append(f"{name:<29} {med:>9.1f} {r['render_median_ms']:>6.1f} {r['cpu_median_ms']:>6.1f} "
                    f"{r['p90_ms']:>6.1f} {r['max_ms']:>6.1f} {r['n_drawn']:>5} {r['n_refused']:>7}  "
                    f"{'yes' if med < TARGET_MS else 'NO'}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows.append(f"(median and p90 over the updates that drew tables; render = the part spent in view_html "
                f"(the HTML tables); the rest is the view function's compute and the widget messages; "
                f"cpu = the kernel's CPU time per update, "
                f"less sensitive to other load; load average now {load:.2f} on {os.cpu_count()} CPUs)")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=60, help="timed updates per explorer (default 60)")
    parser.add_argument("--json", type=Path, help="also write the raw results here")
    parser.add_argument("--chapter", help="only this chapter's explorers, by number (e.g. 16)")
    args = parser.parse_args()
    results = run(args.n, None if args.chapter is None else f"{int(args.chapter):02d}")
    if not results:
        print("no explorer found in helpers.chapters")
        return 1
    print(report(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
