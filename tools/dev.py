"""make's targets in plain Python, for Windows (no make) or anywhere: python tools/dev.py COMMAND

  setup    create .venv (with the Python running this script), install requirements.txt and helpers/ (editable)
  lab      setup if needed, then your work copies and JupyterLab on 127.0.0.1 at the repository root; it
           prints one URL (with its token) that opens your copy of chapter 0 in a browser
  lint     setup if needed, then ruff on the code (helpers, tests, notebooks, benchmarks, tools)
  test     setup if needed, then ruff and one pytest call over tests/ and every notebook through nbval, on
           --jobs workers (by default one per CPU core this process may use, at most 8; see conftest.py)
  unit     setup if needed, then the tests without a browser, notebooks or venv building
  check    setup if needed, then one chapter's tests (--chapter NN): both editions' notebooks through nbval, its
           unit tests, its browser row, its deck and its static explorer's sub-grid
  portable setup if needed, then every chapter through nbval under each of PyTorch's x86 CPU kernels
  execute  re-run chapters in place from a fresh kernel (all, or the ones named after the command)
  slides   a reveal.js deck per chapter in build/slides/ (--edition ja: build/slides/ja/; opens from disk, offline)
  site     the series as a static site in build/site/, both editions (tools/site.py; no network needed)
  pdf      the book as one PDF per edition in build/pdf/: the site printed by Chromium, A4 (tools/pdf.py)

`--torch-index cpu` (Linux) installs torch, at its pin in requirements.txt, from PyTorch's CPU-only wheel index
first (the default index gives Linux the CUDA build, several GB). The stored outputs were measured on Python 3.11.

`lab --edition ja` opens the Japanese edition (notebooks/ja/, copied into my-notebooks/ja/) instead.

`--current-env` uses the Python running this script and its packages (a conda environment, or a venv you
activated) instead of .venv, and installs nothing: `python tools/dev.py lab --current-env` in an activated conda
environment gives the same work copies and JupyterLab configuration as `make lab`; `test` and `unit` likewise.

Learners' work copies: `lab` copies each notebooks/NN_*.ipynb into my-notebooks/ (git-ignored) the first time,
and opens those, so runs and edits never touch the tracked chapters. A copy you have not changed is refreshed
when its chapter changes (after a git pull); a copy you changed is kept, and `lab` says so: delete it to get
the new version.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script, python tools/dev.py: put the repository (tools/) on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tools import series  # noqa: E402  (the layout: standard library only, importable before .venv exists)

ROOT = series.ROOT
VENV = ROOT / ".venv"
STAMP = VENV / ".installed"
WORK = ROOT / "my-notebooks"
MEASURED = (3, 11)
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
LAB_FONT = ROOT / "tools" / "fonts" / "series-ja-gothic.woff"  # JupyterLab's Japanese web font (tools/lab_font.py)
HOW_TO_GET_PYTHON = """Python 3.11 is the version the chapters' outputs were measured on. To get it:
  Windows:        the python.org installer, then:  py -3.11 tools\\dev.py lab
  macOS:          brew install python@3.11  (or the python.org installer, or pyenv install 3.11)
  Debian/Ubuntu:  sudo apt install python3.11 python3.11-venv  (Ubuntu: the deadsnakes PPA has it)
  anywhere:       pyenv install 3.11"""


def pinned(name: str) -> str:
    """The version requirements.txt pins for package `name` (the one source of every version)."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        package, _, version = line.split("#")[0].strip().partition("==")
        if package.lower() == name.lower():
            return version
    raise KeyError(f"requirements.txt pins no {name}")


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(*command: str | Path, **kwargs) -> None:
    print("+", " ".join(str(c) for c in command), flush=True)
    subprocess.run([str(c) for c in command], check=True, cwd=ROOT, **kwargs)


def check_python() -> None:
    version = sys.version_info[:2]
    if version < MEASURED:
        sys.exit(f"Python {version[0]}.{version[1]} is too old (the pins need 3.11 or newer).\n{HOW_TO_GET_PYTHON}")
    if version != MEASURED:
        print(f"warning: Python {version[0]}.{version[1]}: the pins install, but the outputs were measured on "
              f"3.11; chapter 0 will warn.\n{HOW_TO_GET_PYTHON}", file=sys.stderr)


# What the first set-up downloads, said before pip starts (sizes as this project measured them, 2026-12-02: the CPU
# wheel of torch 2.13.0 is about 200 MB; the rest of .venv/lib/.../site-packages, torch left out, is about 950 MB
# installed, playwright 165 MB and transformers 129 MB the largest; a fresh-clone `make lab` took 235 s on 2 cores
# with the CPU torch, issue #40, 2026-12-01).
TORCH_DOWNLOAD = {
    "cpu": "torch {version}, the CPU-only build from PyTorch's CPU wheel index: about 200 MB",
    "": ("torch {version} from the default index: on Linux the CUDA build with its nvidia-* libraries, several GB "
         "(make lab TORCH_INDEX=cpu, or --torch-index cpu, gets the ~200 MB CPU build instead); on macOS and Windows "
         "the CPU build, a few hundred MB"),
}


def setup_plan(torch_index: str = "") -> str:
    """What setup() is about to download and install, and about how long it takes (printed before pip starts)."""
    if torch_index not in TORCH_DOWNLOAD:
        raise ValueError(f"torch_index must be one of {sorted(TORCH_DOWNLOAD)}, got {torch_index!r}")
    names = [line.split("==")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if "==" in line.split("#")[0] and not line.startswith("torch==")]
    return (f"Setting up {VENV.name}/ (the first time, or after requirements.txt or pyproject.toml changed). pip "
            "downloads and installs:\n"
            f"  - {TORCH_DOWNLOAD[torch_index].format(version=pinned('torch'))};\n"
            f"  - the {len(names)} other pins of requirements.txt ({', '.join(names)}) and their dependencies: "
            "about 950 MB once installed;\n"
            "  - helpers/ itself, editable (nothing to download).\n"
            "On this project's 2-core machine, with the CPU build of torch, a first `make lab` took about 4 minutes "
            "(235 s); the CUDA build's several GB can take much longer on a slow connection. pip shows its progress "
            "below; later runs skip all this.")


def setup(torch_index: str = "") -> Path:
    """.venv with every pin installed (skipped while .venv/.installed is newer than the requirement files)."""
    python = venv_python()
    sources = [ROOT / "requirements.txt", ROOT / "pyproject.toml"]
    fresh = STAMP.exists() and all(STAMP.stat().st_mtime >= s.stat().st_mtime for s in sources)
    # A torch index asked for now and not at the last install (make lab TORCH_INDEX=cpu after a plain first
    # install) reinstalls torch from it; asking for none keeps whatever torch is there.
    if fresh and python.exists() and (not torch_index or STAMP.read_text().strip() == f"torch-index={torch_index}"):
        return python
    print(setup_plan(torch_index), flush=True)
    if not python.exists():
        check_python()
        run(sys.executable, "-m", "venv", VENV)
    run(python, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    # no --quiet from here on: pip's download progress is the only sign of life during a multi-minute install
    if torch_index == "cpu":
        run(python, "-m", "pip", "install", "--force-reinstall", "--no-deps", "--index-url", TORCH_CPU_INDEX,
            f"torch=={pinned('torch')}")
    run(python, "-m", "pip", "install", "-r", "requirements.txt")
    run(python, "-m", "pip", "install", "-e", ".[notebooks]")
    STAMP.write_text(f"torch-index={torch_index}\n")
    return python


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def work_copies(edition: str = "en") -> Path:
    """Copy new or updated chapters into my-notebooks/ (my-notebooks/ja/ for the Japanese edition), never
    overwriting a learner's changes."""
    source, work = series.notebooks(edition, ROOT), series.edition_folder(WORK, edition)
    work.mkdir(parents=True, exist_ok=True)
    ledger_path = work / ".copied.json"  # chapter name -> sha256 of the version last copied
    ledger = json.loads(ledger_path.read_text()) if ledger_path.exists() else {}
    for original in series.chapters_in(source):
        copy, new = work / original.name, _sha(original)
        if not copy.exists() or (_sha(copy) == ledger.get(original.name) and new != ledger[original.name]):
            shutil.copyfile(original, copy)
            ledger[original.name] = new
        elif new != ledger.get(original.name) and _sha(copy) != new:
            print(f"note: {original.relative_to(ROOT)} changed; your copy {copy.relative_to(ROOT)} has your "
                  "changes and was kept (delete it to get the new version)")
    ledger_path.write_text(json.dumps(ledger, indent=1) + "\n")
    for page in source.glob("*.md"):  # the cheat sheet (and the glossary): links from the chapters resolve
        shutil.copyfile(page, work / page.name)
    return work / series.start(edition, ROOT).name


# The series' JupyterLab, the same for `make lab`, Binder (binder/postBuild) and the browser tests (tests/browser):
# defaults for JupyterLab's settings, from <config dir>/labconfig/default_setting_overrides.json (a learner's own
# settings, Settings > Settings Editor, still win) ...
LAB_SETTINGS = {
    # no "Would you like to receive official Jupyter news?" toast on first open, and no update check (both fetch
    # from jupyter.org)
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # a double-clicked .md file (the cheat sheet, the glossary) opens rendered; right-click > Open With > Editor
    # edits it
    "@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"markdown": "Markdown Preview"}},
}
# ... and the server's options, from <config dir>/jupyter_server_config.json: jupyter-lsp comes with JupyterLab,
# but the series uses no language server (JupyterLab's LSP features are off by default), and its autodetection
# only logs the ~20 servers it did not find.
SERVER_CONFIG = {"LanguageServerManager": {"autodetect": False}}
# The kernels' sockets encrypted: the server makes CurveZMQ keys for each kernel whose kernelspec declares it, as
# ipykernel's does ("auto": a kernel that does not still starts, unencrypted, as before). Without it, ipykernel
# warns "Kernel is running over TCP without encryption" in the terminal on every kernel start. Written only when
# the lab's pyzmq has CurveZMQ (PyPI's wheels and conda-forge's builds do): jupyter_client refuses "auto" without
# it, and its kernels would not start at all.
ENCRYPTED_KERNELS = {"KernelManager": {"transport_encryption": "auto"}}
HAS_CURVE = "import sys, zmq; sys.exit(0 if zmq.has('curve') else 1)"


def has_curve(python: str | Path | None = None) -> bool:
    """Whether `python`'s pyzmq (this process's if None) can encrypt with CurveZMQ."""
    if python is None:
        try:
            import zmq
        except ImportError:
            return False
        return bool(zmq.has("curve"))
    return subprocess.run([str(python), "-c", HAS_CURVE], cwd=ROOT, capture_output=True).returncode == 0


def _merge_json(path: Path, values: dict) -> None:
    """Write `values` into the JSON object in `path`, one level deep, keeping the file's other entries."""
    current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for key, value in values.items():
        current[key] = {**current.get(key, {}), **value} if isinstance(value, dict) else value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=1) + "\n", encoding="utf-8")


def jupyter_config(config_dir: str | Path, python: str | Path | None = None) -> Path:
    """The series' Jupyter configuration in `config_dir` (a JUPYTER_CONFIG_DIR): LAB_SETTINGS, SERVER_CONFIG (and
    ENCRYPTED_KERNELS where `python` has CurveZMQ) and custom/custom.css with the Japanese web font
    (tools/lab_font.py's subset, inlined by helpers/cjk_font.py), written by `python`, which must import helpers
    (this process if None). Returns `config_dir`."""
    config_dir = Path(config_dir)
    _merge_json(config_dir / "labconfig" / "default_setting_overrides.json", LAB_SETTINGS)
    _merge_json(config_dir / "jupyter_server_config.json",
                {**SERVER_CONFIG, **(ENCRYPTED_KERNELS if has_curve(python) else {})})
    if python is None:
        from helpers.cjk_font import install_jupyter_css

        install_jupyter_css(config_dir, LAB_FONT)
    else:  # the Python of the lab, which may not be this one (dev.py runs before .venv exists)
        subprocess.run([str(python), "-c", "import sys; from helpers.cjk_font import install_jupyter_css as i; "
                        "i(sys.argv[1], sys.argv[2])", str(config_dir), str(LAB_FONT)], check=True, cwd=ROOT)
    return config_dir


def workspace(edition: str) -> str:
    """The JupyterLab workspace of an edition: each has its own open tabs and layout, so the English and the
    Japanese chapter 1 (both 01_the_pad_question.ipynb) never sit side by side as two same-named tabs."""
    if edition not in series.EDITIONS:
        raise ValueError(f"edition must be one of {list(series.EDITIONS)}, got {edition!r}")
    return f"attention-masks-{edition}"


def lab_command(python: str | Path, start: Path) -> list[str | Path]:
    """JupyterLab on 127.0.0.1 (a free port from 8888 on, a random token), rooted at the repository, opening
    `start` in its edition's workspace (workspace()). It logs warnings and errors only, so the URL shows once:
    in JupyterLab's own banner."""
    path = start.relative_to(ROOT).as_posix()
    command = [python, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={ROOT}",
               f"--LabApp.default_url=/lab/workspaces/{workspace(series.edition_of(path))}/tree/{path}",
               "--ServerApp.log_level=WARN", "--LabApp.log_level=WARN"]  # no INFO lines: one of them repeats the URL
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--allow-root")
    return command


# Signs the work copies in the Jupyter data directory's signature store (nbformat's NotebookNotary, as
# `jupyter trust` does), so that JupyterLab trusts their stored outputs: no "Notebook ... is not trusted" in the
# terminal, and their HTML outputs (the explorers' tables) show as they were stored. A copy that is already
# trusted is left alone; the learner's own saves are signed by JupyterLab itself.
TRUST = """import sys
import nbformat
from nbformat.sign import NotebookNotary
notary = NotebookNotary()
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    if not notary.check_signature(nb):
        notary.sign(nb)
"""


def trust(python: str | Path, notebooks: list[Path], env: dict[str, str] | None = None) -> None:
    """Mark `notebooks` trusted for the JupyterLab that `python` runs with `env` (its data directory)."""
    subprocess.run([str(python), "-c", TRUST, *map(str, notebooks)], check=True, cwd=ROOT, env=env)


def lab(python: Path, edition: str = "en") -> None:
    start = work_copies(edition)
    env = dict(os.environ)
    ask = "from jupyter_core.paths import jupyter_config_dir as d; print(d())"
    from_user = subprocess.run([str(python), "-c", ask], check=True, capture_output=True, text=True).stdout.strip()
    env.setdefault("JUPYTERLAB_SETTINGS_DIR", str(Path(from_user) / "lab" / "user-settings"))  # keep the user's
    env.setdefault("JUPYTERLAB_WORKSPACES_DIR", str(Path(from_user) / "lab" / "workspaces"))
    env["JUPYTER_CONFIG_DIR"] = str(jupyter_config(ROOT / "build" / "jupyter-config", python))  # see LAB_SETTINGS
    trust(python, sorted(start.parent.glob("*.ipynb")), env)
    print(f"Your copies of the chapters: {start.parent.relative_to(ROOT).as_posix()}/ (notebooks/ stays as it is), "
          f"in JupyterLab's workspace {workspace(edition)}.\n"
          "JupyterLab starts; open the http://127.0.0.1:... URL it prints in your browser. Ctrl-C here stops it.",
          flush=True)
    run(*lab_command(python, start), env=env)


NBVAL = ["--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/sanitize.cfg"]
LINTED = ["helpers", "tests", series.NOTEBOOKS, "benchmarks", "tools", "conftest.py"]


def default_jobs() -> int:
    """pytest workers by default: one per CPU core this process may use (2 on a 2-core machine), at most 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 8))


def xdist(jobs: int) -> list[str]:
    """pytest-xdist's flags: `jobs` workers, each unit of conftest.py whole, in collection order."""
    return ["-n", str(jobs), "--dist", "loadscope", "--no-loadscope-reorder"]


def test_command(python: Path, jobs: int | None = None) -> list[str | Path]:
    """`make test`'s pytest call on `jobs` workers (default_jobs if None): unit and browser tests, and every chapter
    of both editions through nbval (the Japanese edition has the English code, checked by
    tests/test_japanese_edition.py, and outputs of its own: its hints and summaries are in Japanese)."""
    return [python, "-m", "pytest", "tests", series.NOTEBOOKS, *NBVAL, "-q", *xdist(jobs or default_jobs())]


def unit_command(python: Path, jobs: int | None = None) -> list[str | Path]:
    """`make unit`'s pytest call on `jobs` workers (default_jobs if None): no browser, no notebooks, nothing slow."""
    return [python, "-m", "pytest", "tests", "-q", "-m", "not browser and not slow", *xdist(jobs or default_jobs())]


def check_command(python: Path, chapter: str, jobs: int | None = None) -> list[str | Path]:
    """`make check CH=NN`'s pytest call: one chapter's loop. Both editions' notebooks through nbval, its test module,
    and every test that takes the chapter as a parameter (its browser row, its deck, its static explorer's
    sub-grid, its layout tests): conftest.py's --chapter picks them."""
    try:
        series.chapter_number(chapter, "CH")
    except ValueError as error:
        raise SystemExit(str(error)) from None
    found = [path for path in series.every_chapter() if series.number(path) == chapter]
    notebooks = [path.relative_to(ROOT).as_posix() for path in found]
    return [python, "-m", "pytest", "tests", *notebooks, *NBVAL, "-q", "--chapter", chapter,
            *xdist(jobs or default_jobs())]


def main(argv: list[str] | None = None) -> int:
    summary, _, details = __doc__.partition("\n")  # the summary once, as the description; the rest after the options
    parser = argparse.ArgumentParser(description=summary, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=details.strip("\n"))
    parser.add_argument("command", choices=["setup", "lab", "lint", "test", "unit", "check", "portable", "execute",
                                            "slides", "site", "pdf"])
    parser.add_argument("notebooks", nargs="*", help="for execute: the chapters to re-run (default: all)")
    parser.add_argument("--torch-index", choices=["", "cpu"], default=os.environ.get("TORCH_INDEX", ""))
    parser.add_argument("--no-setup", action="store_true", help="use .venv as it is (make has set it up)")
    parser.add_argument("--current-env", action="store_true",
                        help="use the Python running this script (a conda env, an activated venv) instead of .venv; "
                             "installs nothing")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS") or default_jobs()),
                        help="test, unit, portable: how many pytest workers (default: one per CPU core, at most 8)")
    parser.add_argument("--chapter", metavar="NN", default=os.environ.get("CH"),
                        help="check: the chapter whose tests to run (two digits)")
    parser.add_argument("--edition", choices=series.EDITIONS, default=os.environ.get("EDITION") or "en",
                        help="lab, slides: the English chapters (default) or the Japanese edition, notebooks/ja/")
    args = parser.parse_args(argv)
    if args.current_env and args.command == "setup":
        parser.error("setup builds .venv; with --current-env, install into your environment yourself (README)")
    python = Path(sys.executable) if args.current_env else venv_python() if args.no_setup else setup(args.torch_index)
    try:
        if args.command == "lab":
            lab(python, args.edition)
        elif args.command == "lint":
            run(python, "-m", "ruff", "check", *LINTED)
        elif args.command == "test":
            run(python, "-m", "ruff", "check", *LINTED)
            run(*test_command(python, args.jobs))
        elif args.command == "unit":
            run(*unit_command(python, args.jobs))
        elif args.command == "check":
            if args.chapter is None:
                parser.error("check needs --chapter NN (make check CH=NN)")
            run(*check_command(python, args.chapter, args.jobs))
        elif args.command == "portable":
            run(python, "-m", "tools.portable", "--jobs", str(args.jobs))
        elif args.command == "execute":
            run(python, "-m", "tools.execute_notebooks", *args.notebooks)  # none: every English chapter
        elif args.command == "slides":
            run(python, "-m", "tools.slides", "--edition", args.edition,
                "--out", "build/slides" + ("/ja" if args.edition == "ja" else ""))   # as make slides EDITION=…
        elif args.command == "site":
            run(python, "-m", "tools.site", "--out", "build/site")
        elif args.command == "pdf":
            run(python, "-m", "tools.pdf", "--site", "build/site", "--out", "build/pdf")
    except subprocess.CalledProcessError as error:
        return error.returncode
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
