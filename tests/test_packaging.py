"""`pip install .` in a bare virtualenv (torch and this package, nothing else) gives a working core.

The venv is made without pip and without access to this environment's packages. It sees torch through one
.pth file naming build/pkgtest-torch-<key>/, a folder of links to torch and its dependencies (the closure of
torch's requirements, as this environment installed them: what `pip install torch==2.13.0` would put in the venv,
without copying 700 MB again). Then this environment's pip installs the package into it (`pip --python`), NOT
editable and without extras, from a copy of pyproject.toml and helpers/ (so no build files land in the work tree).
A script run in the venv, outside the repository and without PYTHONPATH, imports helpers and its core modules,
runs attention_steps and check_padding_invariance on nn.MultiheadAttention, and checks that neither matplotlib,
ipywidgets nor the Japanese font package was imported, and that show_weights names the extra it needs.
The venv is checked to hold nothing but torch, its own dependencies and the package; the package is
uninstalled afterwards, so build/ keeps a venv with torch only for the next run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "attention-masks-helpers"
# torch 2.13.0's own dependencies (pip list in a venv after `pip install torch==2.13.0`), setuptools among them.
TORCH_DEPS = {"filelock", "fsspec", "jinja2", "markupsafe", "mpmath", "networkx", "sympy", "typing-extensions",
              "setuptools"}

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
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def requirement_closure(name: str) -> list[importlib.metadata.Distribution]:
    """`name` and every distribution it requires, transitively (no extras), as installed here."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = [name]
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in found:
            continue
        found[key] = dist
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def venv_with_torch() -> Path:
    """build/pkgtest-<key>: a bare venv (no pip) that sees torch and its dependencies only, through links."""
    version = importlib.metadata.version("torch")
    key = hashlib.sha256(f"{sys.version_info[:2]} {sys.prefix} {version}\n".encode()
                         + (ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    venv, links = ROOT / "build" / f"pkgtest-{key}", ROOT / "build" / f"pkgtest-torch-{key}"
    if not (venv / ".torch-linked").exists():
        shutil.rmtree(venv, ignore_errors=True)
        shutil.rmtree(links, ignore_errors=True)
        links.mkdir(parents=True)
        for dist in requirement_closure("torch"):
            for top in {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}:
                if not (links / top).exists():
                    (links / top).symlink_to(Path(dist.locate_file(top)).resolve())
        run(sys.executable, "-m", "venv", "--without-pip", venv)  # no --system-site-packages: a bare venv
        python = venv / "bin" / "python"
        site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").strip())
        (site / "torch-links.pth").write_text(f"{links}\n")
        (venv / ".torch-linked").touch()
    return venv


def test_pip_install_gives_a_core_without_matplotlib(tmp_path):
    venv = venv_with_torch()
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python]  # this environment's pip, working on the venv
    source = tmp_path / "src"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    try:
        run(*pip, "install", "--quiet", source)  # not editable, no extras, dependencies resolved
        listed = json.loads(run(*pip, "list", "--format=json"))
        names = {item["name"].lower().replace("_", "-") for item in listed}
        assert {"torch", PACKAGE} <= names, names
        extra = names - TORCH_DEPS - {"torch", PACKAGE}
        assert not extra, f"the venv holds more than torch and the package: {sorted(extra)}"
        where = run(python, "-c", "import importlib.util; print(importlib.util.find_spec('helpers').origin)",
                    cwd=tmp_path).strip()
        installed = {p.relative_to(Path(where).parent).as_posix() for p in Path(where).parent.rglob("*.py")}
        source_files = {p.relative_to(ROOT / "helpers").as_posix() for p in (ROOT / "helpers").rglob("*.py")}
        assert installed == source_files, f"pyproject.toml's packages leave out {sorted(source_files - installed)}"
        (tmp_path / "core.py").write_text(SCRIPT)
        out = run(python, tmp_path / "core.py", cwd=tmp_path)
    finally:
        run(*pip, "uninstall", "--quiet", "--yes", PACKAGE)  # the cached venv keeps torch only
    assert "core OK" in out and "loaded: []" in out, out
