"""requirements.txt (pip), environment.yml (conda runtime), binder/environment.yml (Binder's runtime) and
environment-test.yml (conda test tools) describe one stack: same versions, conda-forge names, no test tools and no
local package in the runtime files; and repo2docker's rules for the binder/ folder hold."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch-cpu"}  # pip name -> conda-forge name where they differ
TEST_ONLY = {"pytest", "pytest-xdist", "hypothesis", "ruff", "nbval", "playwright"}
# conda-forge's `playwright` is the Node.js tool (its recipe needs nodejs), not the Python library: pip only.
NOT_ON_CONDA = {"playwright", "pytorch", "torch"}


def pip_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            assert re.fullmatch(r"[A-Za-z0-9_.\-]+==[0-9][\w.]*", line), f"{line!r} is not name==version"
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


class Env:
    def __init__(self, path: Path) -> None:
        env = yaml.safe_load(path.read_text())
        assert env["channels"] == ["conda-forge"], f"{path.name}: conda-forge only"
        self.conda, self.pip, self.pip_lines = {}, {}, []
        for dep in env["dependencies"]:
            if isinstance(dep, dict):
                self.pip_lines = list(dep["pip"])
            elif dep != "pip":
                name, version = dep.split("=")
                self.conda[name.lower()] = version
        for line in self.pip_lines:
            if line.startswith("--"):                 # a pip option, e.g. --extra-index-url
                continue
            assert "==" in line, f"{path.name}: pip line {line!r} is not an exact pin"
            name, version = line.split("==")
            self.pip[name.lower()] = version.split("+")[0]   # torch==2.13.0+cpu: the CPU build of the pin

    def pins(self) -> dict[str, str]:
        """Every pin under its pip name."""
        to_pip = {conda: pip for pip, conda in CONDA_NAMES.items()}
        return {to_pip.get(name, name): v for name, v in self.conda.items()} | self.pip


RUNTIME, TESTS = Env(ROOT / "environment.yml"), Env(ROOT / "environment-test.yml")
BINDER = Env(ROOT / "binder" / "environment.yml")
CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"


def test_the_two_files_together_pin_exactly_requirements_txt():
    pip, runtime, tests = pip_pins(), RUNTIME.pins(), TESTS.pins()
    assert pip["torch"] == "2.13.0"
    assert runtime.pop("python") == "3.11"
    assert not set(runtime) & set(tests), "a package is in both environment files"
    both = runtime | tests
    for name, version in pip.items():
        assert name in both, f"{name} is in requirements.txt but in neither environment file"
        assert both[name] == version, f"{name}: {version} (requirements.txt) vs {both[name]} (environment files)"
    assert set(both) == set(pip), f"not in requirements.txt: {sorted(set(both) - set(pip))}"


def test_runtime_environment_is_lean():
    assert not TEST_ONLY & set(RUNTIME.pins()), "test tools belong in environment-test.yml"
    assert set(TEST_ONLY) <= set(TESTS.pins())
    for name in ("jupyterlab", "ipykernel", "ipywidgets", "matplotlib", "matplotlib-fontja"):
        assert name in RUNTIME.pins(), f"the chapters need {name} at run time"


def test_no_local_pip_requirement():
    """A local requirement (-e ., ./, file:) turns off repo2docker's cached environment layer; postBuild installs it."""
    for env in (RUNTIME, TESTS, BINDER):
        for line in env.pip_lines:
            assert not re.match(r"(-e|--editable)\b|\.|/|file:|git\+", line.strip()), f"local pip requirement {line!r}"


def test_binder_follows_repo2dockers_rules():
    """repo2docker uses binder/ when it exists and then ignores every configuration file at the top level, so all of
    Binder's set-up is in binder/: its environment is environment.yml's, with torch from PyTorch's CPU wheel index
    (conda-forge's pytorch-cpu lags PyPI's torch; the default PyPI wheel for Linux is the CUDA build), and its
    postBuild (run from the repository root, after the environment) installs helpers/."""
    assert (ROOT / "binder").is_dir()
    assert not (ROOT / "postBuild").exists(), "a top-level postBuild is ignored next to binder/: keep it in binder/"
    runtime = RUNTIME.pins()
    binder = BINDER.pins()
    assert runtime.pop("torch") == binder.pop("torch") == pip_pins()["torch"]
    assert runtime == binder, "binder/environment.yml must pin what environment.yml pins"
    assert "pytorch-cpu" not in BINDER.conda and "torch" in BINDER.pip
    assert CPU_INDEX in BINDER.pip_lines, "Binder takes torch from PyTorch's CPU wheel index"
    assert f"torch=={pip_pins()['torch']}+cpu" in BINDER.pip_lines, "the +cpu build, not PyPI's CUDA wheel"
    assert BINDER.pip_lines.index(CPU_INDEX) < BINDER.pip_lines.index(f"torch=={pip_pins()['torch']}+cpu")
    post_build = ROOT / "binder" / "postBuild"
    assert post_build.stat().st_mode & stat.S_IXUSR, "binder/postBuild must be executable"
    assert post_build.read_text().startswith("#!/usr/bin/env bash")
    assert "pip install --no-deps -e ." in post_build.read_text()
    # the JupyterLab configuration of `make lab` (tools/dev.py's jupyter_config, tested in tests/test_dev.py), in
    # the Jupyter config directory that Binder's JupyterLab reads, after helpers/ is installed (custom.css needs it)
    steps = [line for line in post_build.read_text().splitlines() if line and not line.startswith("#")]
    configure = ('python -c "import sys; from tools.dev import jupyter_config as c; print(c(sys.argv[1]))" '
                 '"${HOME}/.jupyter"')
    assert configure in steps and steps.index(configure) > steps.index("python -m pip install --no-deps -e .")


def test_conda_names_are_conda_forge_names():
    for env in (RUNTIME, TESTS):
        assert not NOT_ON_CONDA & set(env.conda), "torch is pytorch-cpu on conda-forge; playwright comes from pip"
    assert "pytorch-cpu" in RUNTIME.conda
    assert "playwright" in TESTS.pip


def test_readme_chapter_links_exist():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme):
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"


# Where a torch version is named in prose or code: "torch 2.13.0", "torch==2.13.0", "torch 2.13.0 (CPU)".
TORCH_VERSION = re.compile(r"\btorch(?: |==)(\d+\.\d+\.\d+)\b")


def test_every_torch_version_named_is_the_pin():
    """requirements.txt is the one source of the torch version: everything that names one agrees with it, or names
    a release of the version matrix (helpers.versions.ALSO_RUN_ON)
    (tools/dev.py and tools/links.py read the pins from the file; helpers/versions.py cannot, once installed)."""
    from helpers import versions
    from tools import series
    from tools.dev import pinned

    pin = pinned("torch")
    assert versions.MEASURED_TORCH == pin, "helpers/versions.py's MEASURED_TORCH"
    texts = [ROOT / name for name in ("README.md", "README.ja.md", "Makefile", "environment.yml",
                                      "binder/environment.yml")]
    texts += [*ROOT.glob("docs/*.md"), *ROOT.glob("notebooks/**/*.md"), *ROOT.glob("tools/*.py")]
    named = {}
    for path in texts:
        named.update({f"{path.relative_to(ROOT)}: torch {v}": v for v in TORCH_VERSION.findall(path.read_text())})
    for path in series.every_chapter():
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                named.update({f"{path.relative_to(ROOT)} cell {cell.id}: torch {v}": v
                              for v in TORCH_VERSION.findall(cell.source)})
    assert named, "the version check found no mention at all: is TORCH_VERSION still right?"
    wrong = [where for where, version in named.items() if version != pin and version not in versions.ALSO_RUN_ON]
    assert not wrong, (f"these name another torch than requirements.txt's {pin} or a release the chapters also run "
                       f"on ({', '.join(versions.ALSO_RUN_ON)}): {wrong}")
