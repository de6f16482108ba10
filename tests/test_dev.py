"""tools/dev.py's work copies: learners' runs never touch notebooks/, and a pull still reaches unchanged copies."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tools import dev, series

ROOT = dev.ROOT


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    series.notebooks(root=tmp_path).mkdir()
    for name in ("00_start_here.ipynb", "01_a.ipynb"):
        (series.notebooks(root=tmp_path) / name).write_text(f"{name} v1")
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "WORK", tmp_path / "my-notebooks")
    return tmp_path


def test_work_copies(repo: Path, capsys: pytest.CaptureFixture):
    start = dev.work_copies()
    assert start == repo / "my-notebooks" / "00_start_here.ipynb"
    assert start.read_text() == "00_start_here.ipynb v1"
    ours = repo / "my-notebooks" / "01_a.ipynb"
    ours.write_text("01 with my outputs")                    # the learner runs chapter 1
    for name in ("00_start_here.ipynb", "01_a.ipynb"):        # git pull brings new versions
        (series.notebooks(root=repo) / name).write_text(f"{name} v2")
    dev.work_copies()
    assert start.read_text() == "00_start_here.ipynb v2", "an unchanged copy follows its chapter"
    assert ours.read_text() == "01 with my outputs", "a learner's copy is never overwritten"
    assert "01_a.ipynb changed; your copy" in capsys.readouterr().out
    assert (series.notebooks(root=repo) / "01_a.ipynb").read_text() == "01_a.ipynb v2"
    ours.unlink()                                            # delete it to get the new chapter
    dev.work_copies()
    assert ours.read_text() == "01_a.ipynb v2"


def test_gitignored():
    assert "my-notebooks/" in (ROOT / ".gitignore").read_text().splitlines()


def test_setup_reinstalls_torch_when_a_torch_index_is_asked_for_later(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch):
    """`make lab TORCH_INDEX=cpu` after a plain first install: the stamp records the index, so torch is reinstalled."""
    python = tmp_path / "python"
    python.write_text("")
    stamp = tmp_path / ".installed"
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n")
    (tmp_path / "pyproject.toml").write_text("")
    stamp.write_text("torch-index=\n")
    calls = []
    monkeypatch.setattr(dev, "ROOT", tmp_path)
    monkeypatch.setattr(dev, "STAMP", stamp)
    monkeypatch.setattr(dev, "venv_python", lambda: python)
    monkeypatch.setattr(dev, "run", lambda *command, **kwargs: calls.append([str(c) for c in command]))
    dev.setup("")                                   # nothing asked for: the fresh stamp stands
    assert calls == []
    dev.setup("cpu")                                # asked for now, not before: reinstall torch from the CPU index
    assert any("--force-reinstall" in call and dev.TORCH_CPU_INDEX in call for call in calls)
    assert stamp.read_text() == "torch-index=cpu\n"
    calls.clear()
    dev.setup("cpu")                                # recorded: nothing to do
    assert calls == []


@pytest.mark.parametrize("index", ["", "cpu"])
def test_setup_says_what_it_downloads_first_and_shows_pips_progress(index: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture):
    """Before the first pip call: torch's build and size, the other pins by name, about how long it took here; then
    pip without --quiet (its download progress shows), except for pip's own upgrade."""
    python = tmp_path / "python"
    python.write_text("")
    printed_before = []
    monkeypatch.setattr(dev, "STAMP", tmp_path / ".installed")
    monkeypatch.setattr(dev, "venv_python", lambda: python)
    monkeypatch.setattr(dev, "run", lambda *command, **kwargs: printed_before.append(
        ([str(c) for c in command], capsys.readouterr().out)))
    dev.setup(index)
    (first, said), *later = printed_before
    assert said == dev.setup_plan(index) + "\n"
    assert ("about 200 MB" if index == "cpu" else "several GB") in said
    assert "jupyterlab" in said and "transformers" in said and "235 s" in said
    installs = [call for call, _ in printed_before if "install" in call and "--upgrade" not in call]
    assert installs and not [call for call in installs if "--quiet" in call or "-q" in call]
    with pytest.raises(ValueError, match="torch_index"):
        dev.setup_plan("cuda")


def test_help_prints_the_description_once(capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit):
        dev.main(["--help"])
    shown = capsys.readouterr().out
    summary = dev.__doc__.splitlines()[0]
    assert shown.count(summary) == 1, shown
    assert "Learners' work copies" in shown and "--current-env" in shown


def test_jupyter_config(tmp_path: Path):
    """The files JupyterLab reads from a JUPYTER_CONFIG_DIR: the settings defaults (no news question, markdown
    rendered), the server's options (no language-server autodetection), the custom.css with the Japanese font.
    Entries already in those files are kept."""
    server = tmp_path / "jupyter_server_config.json"
    server.write_text('{"ServerApp": {"iopub_msg_rate_limit": 1}, "LanguageServerManager": {"extra": 1}}')
    assert dev.jupyter_config(tmp_path) == tmp_path
    assert json.loads(server.read_text()) == {"ServerApp": {"iopub_msg_rate_limit": 1},
                                              "LanguageServerManager": {"extra": 1, "autodetect": False},
                                              "KernelManager": {"transport_encryption": "auto"}}
    assert (tmp_path / "custom" / "custom.css").is_file()
    assert json.loads((tmp_path / "jupyter_lab_config.json").read_text()) == {"LabApp": {"custom_css": True}}
    dev.jupyter_config(tmp_path)                              # again: the same files
    assert json.loads((tmp_path / "labconfig" / "default_setting_overrides.json").read_text()) == dev.LAB_SETTINGS


def test_jupyterlab_reads_the_settings_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """jupyterlab_server (the version pinned) serves LAB_SETTINGS as the schema defaults of the two plugins."""
    from jupyterlab.commands import get_app_dir
    from jupyterlab_server.settings_utils import get_settings

    dev.jupyter_config(tmp_path)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path))
    app = Path(get_app_dir())
    user = tmp_path / "user-settings"   # no user settings: the defaults alone
    for plugin, values in dev.LAB_SETTINGS.items():
        settings, _ = get_settings(str(app / "settings"), str(app / "schemas"), str(user), schema_name=plugin)
        defaults = {name: settings["schema"]["properties"][name]["default"] for name in values}
        assert defaults == values, plugin


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # jupyter-lsp's traits, at import
def test_the_server_config_turns_off_language_server_autodetection(tmp_path: Path):
    from jupyter_lsp.manager import LanguageServerManager
    from traitlets.config.loader import JSONFileConfigLoader

    dev.jupyter_config(tmp_path)
    config = JSONFileConfigLoader("jupyter_server_config.json", str(tmp_path)).load_config()
    assert LanguageServerManager(config=config).autodetect is False
    assert LanguageServerManager().autodetect is True     # jupyter-lsp's default, which logs the skipped servers


def test_lab_command_prints_the_url_once():
    """JupyterLab logs its URL at INFO ("is running at") and again in its banner (CRITICAL, when it generated the
    token): WARN keeps the banner only. No browser is opened: the URL is printed, and the README says so."""
    command = [str(c) for c in dev.lab_command("python", dev.ROOT / "my-notebooks" / "00_start_here.ipynb")]
    assert "--ServerApp.log_level=WARN" in command and "--LabApp.log_level=WARN" in command
    assert "--no-browser" in command and "--ServerApp.ip=127.0.0.1" in command
    assert "--LabApp.default_url=/lab/workspaces/attention-masks-en/tree/my-notebooks/00_start_here.ipynb" in command
    assert not [c for c in command if "token" in c.lower()], "the token is JupyterLab's, generated, not on argv"


def test_lab_sets_up_work_copies_and_config(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture):
    (series.notebooks(root=repo) / "cheatsheet.md").write_text("# sheet")
    calls = []
    real = dev.jupyter_config
    monkeypatch.setattr(dev, "jupyter_config", lambda config_dir, python=None: real(config_dir))  # in-process
    monkeypatch.setattr(dev, "run", lambda *command, **kwargs: calls.append((command, kwargs)))
    trusted = []
    monkeypatch.setattr(dev, "trust", lambda python, notebooks, env: trusted.extend(notebooks))
    monkeypatch.delenv("JUPYTERLAB_SETTINGS_DIR", raising=False)
    dev.lab(Path(sys.executable))
    assert trusted == sorted((repo / "my-notebooks").glob("*.ipynb")) and trusted
    (command, kwargs), = calls
    assert command[:3] == (Path(sys.executable), "-m", "jupyterlab")
    config = Path(kwargs["env"]["JUPYTER_CONFIG_DIR"])
    assert config == repo / "build" / "jupyter-config"
    assert (config / "labconfig" / "default_setting_overrides.json").is_file()
    assert {p.name for p in (repo / "my-notebooks").iterdir()} >= {"00_start_here.ipynb", "cheatsheet.md"}
    assert "my-notebooks/" in capsys.readouterr().out


def test_each_edition_opens_in_its_own_workspace():
    """Both editions have a 01_the_pad_question.ipynb: one workspace each, so they never open as two tabs of the
    same name side by side."""
    urls = {edition: next(str(c) for c in dev.lab_command("python", dev.ROOT / path) if "default_url" in str(c))
            for edition, path in (("en", "my-notebooks/01_the_pad_question.ipynb"),
                                  ("ja", "my-notebooks/ja/01_the_pad_question.ipynb"))}
    assert urls["en"].endswith("/lab/workspaces/attention-masks-en/tree/my-notebooks/01_the_pad_question.ipynb")
    assert urls["ja"].endswith("/lab/workspaces/attention-masks-ja/tree/my-notebooks/ja/01_the_pad_question.ipynb")
    with pytest.raises(ValueError, match="edition"):
        dev.workspace("fr")


def test_the_kernel_sockets_are_encrypted_so_ipykernel_does_not_warn(tmp_path: Path):
    """ipykernel warns "Kernel is running over TCP without encryption" unless the server hands it CurveZMQ keys,
    which jupyter_client does with transport_encryption "auto" for a kernelspec that declares "curve"."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from traitlets.config.loader import JSONFileConfigLoader

    assert dev.has_curve() and dev.has_curve(sys.executable)
    dev.jupyter_config(tmp_path)
    config = JSONFileConfigLoader("jupyter_server_config.json", str(tmp_path)).load_config()
    manager = KernelManager(config=config, kernel_name="python3")
    assert manager.transport_encryption == "auto"
    assert "curve" in KernelSpecManager().get_kernel_spec("python3").metadata.get("supported_encryption", [])
    assert manager._kernel_supports_curve_encryption()


def test_no_encryption_setting_where_pyzmq_cannot_encrypt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """jupyter_client raises on transport_encryption "auto" without CurveZMQ: the setting is left out there."""
    monkeypatch.setattr(dev, "has_curve", lambda python=None: False)
    dev.jupyter_config(tmp_path)
    assert "KernelManager" not in json.loads((tmp_path / "jupyter_server_config.json").read_text())


def test_trust_signs_the_work_copies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """JupyterLab logs "Notebook ... is not trusted" for a notebook with outputs that its signature store does not
    know; the work copies are signed in the store of the lab's data directory."""
    import nbformat
    from nbformat.sign import NotebookNotary

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "1", outputs=[nbformat.v4.new_output("display_data", {"text/html": "<b>x</b>"})])])
    path = tmp_path / "01_a.ipynb"
    nbformat.write(nb, path)
    data = tmp_path / "data"
    data.mkdir()
    env = {**os.environ, "JUPYTER_DATA_DIR": str(data)}
    assert not NotebookNotary(data_dir=str(data)).check_signature(nbformat.read(path, as_version=4))
    dev.trust(sys.executable, [path], env)
    assert NotebookNotary(data_dir=str(data)).check_signature(nbformat.read(path, as_version=4))


@pytest.mark.parametrize("command", ["lab", "test", "unit"])
def test_current_env_uses_this_python_and_installs_nothing(command: str, monkeypatch: pytest.MonkeyPatch):
    """conda (or any environment one manages oneself): `python tools/dev.py lab --current-env`."""
    used = []
    monkeypatch.setattr(dev, "setup", lambda *args: pytest.fail("--current-env must not set up .venv"))
    monkeypatch.setattr(dev, "lab", lambda python, edition: used.append(python))
    monkeypatch.setattr(dev, "run", lambda *command, **kwargs: used.append(command[0]))
    assert dev.main([command, "--current-env"]) == 0
    assert used and set(used) == {Path(sys.executable)}


def test_current_env_refuses_setup():
    with pytest.raises(SystemExit):
        dev.main(["setup", "--current-env"])


def test_the_editable_install_prints_no_setuptools_warning(tmp_path: Path):
    """`pip install -e .` shows the build backend's warnings, even with --quiet (pip's BuildBackendWarning). With
    helpers/ at the top level and packages listed, setuptools picks its meta-path-finder strategy and warns
    ("Editable installation. Please be careful with folders..."); `package-dir = {"" = "."}` makes it the plain
    .pth strategy, which does not. Built here from a copy of pyproject.toml and helpers/: no venv, no install.
    (With this environment's setuptools; pip builds with the newest, in isolation.)"""
    pytest.importorskip("setuptools", reason="venvs of Python 3.12+ have no setuptools; pip fetches it to build")
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "helpers", tmp_path / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-W", "error", "-c",
                            "import sys; from setuptools import build_meta as b; print(b.build_editable(sys.argv[1]))",
                            str(out)], cwd=tmp_path, capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-2000:]
    assert "Warning" not in build.stderr, build.stderr[-2000:]
    wheel, = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        pth = [name for name in archive.namelist() if name.endswith(".pth")]
        assert len(pth) == 1 and archive.read(pth[0]).decode().strip() == str(tmp_path)


def test_the_tests_run_on_one_worker_per_core(monkeypatch):
    """make test's default: one pytest worker per CPU core the process may use, at least 1, at most 8."""
    monkeypatch.setattr(dev.os, "sched_getaffinity", lambda pid: set(range(2)), raising=False)
    assert dev.default_jobs() == 2
    monkeypatch.setattr(dev.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert dev.default_jobs() == 8
    assert dev.xdist(dev.default_jobs())[:2] == ["-n", "8"]


def test_check_runs_one_chapter_in_both_editions(monkeypatch):
    """make check CH=NN: both editions' notebook of chapter NN, the tests, and conftest.py's --chapter NN."""
    command = [str(part) for part in dev.check_command(Path(sys.executable), "04", 2)]
    assert command[command.index("--chapter") + 1] == "04"
    assert [part for part in command if part.endswith(".ipynb")] == [
        "notebooks/04_key_padding_mask.ipynb", "notebooks/ja/04_key_padding_mask.ipynb"]
    with pytest.raises(SystemExit, match="CH must be a chapter's two-digit number"):
        dev.check_command(Path(sys.executable), "4", 2)
    with pytest.raises(SystemExit):
        dev.main(["check", "--current-env"])     # no chapter named


def test_a_chapters_tests_are_its_files_and_the_tests_that_take_it_as_a_parameter():
    """conftest.py's --chapter: which collected tests are a chapter's."""
    import importlib.util  # the repository's conftest.py by its path ("conftest" may be tests/browser's)

    spec = importlib.util.spec_from_file_location("root_conftest", series.ROOT / "conftest.py")
    root_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(root_conftest)
    about_chapter = root_conftest.about_chapter

    class Item:
        def __init__(self, nodeid: str, **params):
            self.nodeid = nodeid
            if params:
                self.callspec = type("Spec", (), {"params": params})()

    chapter = series.chapters()[4]
    assert about_chapter(Item("notebooks/ja/04_key_padding_mask.ipynb::Cell 3"), "04")
    assert about_chapter(Item("tests/chapters/test_ch04_key_padding_mask.py::test_x"), "04")
    assert not about_chapter(Item("tests/chapters/test_ch05_attn_mask_and_causality.py::test_x"), "04")
    assert about_chapter(Item("tests/test_slides.py::test_deck[04_key_padding_mask]", path=chapter), "04")
    assert about_chapter(Item("tests/test_static_explorer.py::test_grid[04]", chapter="04"), "04")
    assert not about_chapter(Item("tests/test_static_explorer.py::test_grid[05]", chapter="05"), "04")
    assert not about_chapter(Item("tests/test_masks.py::test_x"), "04")


@pytest.mark.parametrize("command, module", [("site", "tools.site"), ("pdf", "tools.pdf")])
def test_what_make_builds_runs_without_make(command: str, module: str, monkeypatch: pytest.MonkeyPatch):
    """`python tools/dev.py site|pdf|slides` runs the same module as `make site|pdf|slides` (the Makefile's line)."""
    calls = []
    monkeypatch.setattr(dev, "run", lambda *args, **kwargs: calls.append([str(a) for a in args]))
    assert dev.main([command, "--current-env"]) == 0
    assert calls and calls[0][1:3] == ["-m", module]
    makefile = (Path(dev.__file__).parents[1] / "Makefile").read_text(encoding="utf-8")
    assert f"-m {module} {' '.join(calls[0][3:])}" in makefile, "tools/dev.py and the Makefile disagree"


def test_slides_without_make_takes_the_edition(monkeypatch: pytest.MonkeyPatch):
    calls = []
    monkeypatch.setattr(dev, "run", lambda *args, **kwargs: calls.append([str(a) for a in args]))
    assert dev.main(["slides", "--current-env", "--edition", "ja"]) == 0
    assert calls[0][1:] == ["-m", "tools.slides", "--edition", "ja", "--out", "build/slides/ja"]
