"""requirements.txt (pip) and environment.yml (Binder/conda) must describe the same stack."""

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONDA_NAMES = {"torch": "pytorch-cpu"}  # pip name -> conda-forge name


def pip_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def conda_pins() -> tuple[dict[str, str], list[str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    pins, pip_section = {}, []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip_section = dep["pip"]
        elif "=" in dep:
            name, version = dep.split("=")
            pins[name.lower()] = version
    for line in pip_section:
        if "==" in line:
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins, pip_section


def test_every_pin_matches():
    pip, (conda, _) = pip_pins(), conda_pins()
    assert pip["torch"] == "2.13.0"
    for name, version in pip.items():
        conda_name = CONDA_NAMES.get(name, name)
        assert conda_name in conda, f"{name} is in requirements.txt but not in environment.yml"
        assert conda[conda_name] == version, f"{name}: {version} (pip) vs {conda[conda_name]} (conda)"
    assert set(conda) - {CONDA_NAMES.get(n, n) for n in pip} == {"python"}


def test_python_and_helpers():
    conda, pip_section = conda_pins()
    assert conda["python"] == "3.11"
    assert "-e ." in pip_section, "environment.yml must install the helpers package"


def test_readme_binder_links_open_existing_notebooks():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"https://mybinder\.org/v2/gh/([^/\s]+/[^/\s]+)/(\w+)\?urlpath=lab/tree/(\S+?\.ipynb)", readme)
    assert links, "the README has a Binder badge"
    assert readme.count("mybinder.org/v2/gh/") == 1, "the repository slug is set in exactly one place"
    for _slug, _ref, notebook in links:
        assert (ROOT / notebook).is_file(), f"Binder link opens {notebook}, which does not exist"


def test_readme_chapter_links_exist():
    readme = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\((notebooks/[^)]+\.ipynb)\)", readme):
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"
