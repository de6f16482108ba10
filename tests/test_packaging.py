"""`pip install .` in a bare virtualenv (torch and this package, nothing else) gives a working core.

The venv gets torch==2.13.0 first (the exact pin: any other spec pulls a multi-GB CUDA build; pip's
find-links on this project's machines hold the CPU wheel), then the package, NOT editable and without extras,
from a copy of pyproject.toml and helpers/ (so no build files land in the work tree). A script run in the
venv, outside the repository and without PYTHONPATH, imports helpers and its core modules, runs
attention_steps and check_padding_invariance on nn.MultiheadAttention, and checks that neither matplotlib,
ipywidgets nor the Japanese font package was imported, and that show_weights names the extra it needs.

Installing torch takes one to several minutes on a loaded 2-core machine, so the venv with torch is kept in
build/ under a key of (Python, pyproject.toml) and reused; the package itself is installed afresh every run
and the venv is checked to hold nothing but torch, its own dependencies and the package.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
TORCH = "torch==2.13.0"
PACKAGE = "attention-masks-helpers"
# torch 2.13.0's own dependencies (pip list in a venv after `pip install torch==2.13.0`), plus pip/setuptools.
TORCH_DEPS = {"filelock", "fsspec", "jinja2", "markupsafe", "mpmath", "networkx", "sympy", "typing-extensions"}
VENV_TOOLS = {"pip", "setuptools"}

SCRIPT = r'''
import sys

import torch
from torch import nn

import helpers
import helpers.attention
import helpers.checks
import helpers.masks
from helpers import attention_steps, check_no_future_leak, check_padding_invariance, key_padding_mask

assert "site-packages" in helpers.__file__, helpers.__file__  # the installed copy, not the repository's
from importlib.resources import files
assert files("helpers").joinpath("cjk_font.woff").read_bytes()[:4] == b"wOFF"  # package data is installed
torch.manual_seed(0)
q = k = v = torch.randn(2, 4, 8)
steps = attention_steps(q, k, v, key_padding_mask=key_padding_mask([4, 2]))
assert steps.weights[1, :, 2:].eq(0).all()
mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
report = check_padding_invariance(mha, trials=5)
assert report.passed, report
assert check_no_future_leak(mha, trials=5).passed
loaded = sorted({"matplotlib", "ipywidgets", "matplotlib_fontja", "numpy"} & set(sys.modules))
try:
    helpers.show_weights
except ImportError as error:
    assert "notebooks" in str(error), error
else:
    raise AssertionError("show_weights imported without the notebooks extra")
print("core OK;", report, "; loaded:", loaded)
'''


def run(*args: str | Path, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def venv_with_torch() -> Path:
    """build/pkgtest-<key>: a venv holding torch and its dependencies only (created once per key)."""
    key = hashlib.sha256(f"{sys.version_info[:2]} {TORCH}\n".encode() + (ROOT / "pyproject.toml").read_bytes())
    venv = ROOT / "build" / f"pkgtest-{key.hexdigest()[:12]}"
    python = venv / "bin" / "python"
    if not (venv / ".torch-installed").exists():
        shutil.rmtree(venv, ignore_errors=True)
        run(sys.executable, "-m", "venv", venv)          # no --system-site-packages: a bare venv
        run(python, "-m", "pip", "install", "--quiet", TORCH)
        (venv / ".torch-installed").touch()
    return venv


def test_pip_install_gives_a_core_without_matplotlib(tmp_path):
    venv = venv_with_torch()
    python = venv / "bin" / "python"
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    try:
        run(python, "-m", "pip", "install", "--quiet", source)  # not editable, no extras, dependencies resolved
        listed = json.loads(run(python, "-m", "pip", "list", "--format=json"))
        names = {item["name"].lower().replace("_", "-") for item in listed}
        extra = names - TORCH_DEPS - VENV_TOOLS - {"torch", PACKAGE}
        assert not extra, f"the venv holds more than torch and the package: {sorted(extra)}"
        (tmp_path / "core.py").write_text(SCRIPT)
        out = run(python, tmp_path / "core.py", cwd=tmp_path)
    finally:
        run(python, "-m", "pip", "uninstall", "--quiet", "--yes", PACKAGE)  # the cached venv keeps torch only
    assert "core OK" in out and "loaded: []" in out, out
