"""Real-browser fixtures: one JupyterLab server and one Chromium for the whole browser suite.

The server runs on 127.0.0.1 with a random token and a free port, with every JUPYTER_* and settings
directory under a temp dir (its config directory holds what `make lab` and Binder configure: tools/dev.py's
jupyter_config), serving a COPY of notebooks/ (Run All must not touch the repo's files).
Chromium is Debian's /usr/bin/chromium driven by Playwright (never `playwright install`).
Outside CI a missing Chromium skips these tests; with CI=true it fails them.
Screenshots go to test-artifacts/browser/ (git-ignored).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browserlib import NOTEBOOKS, ROOT, SITE_CHAPTERS, chromium_with_fonts, new_page, require_chromium

from tools import dev, series, site


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    url: str          # http://127.0.0.1:PORT
    token: str
    root: Path        # the served copy; notebooks are under root / "notebooks"
    process: subprocess.Popen
    log: Path

    def api(self, method: str, path: str, body: dict | None = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", method=method, data=data,
                                         headers={"Authorization": f"token {self.token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shutdown_kernels(self) -> None:
        """Shut down every session and kernel (the server stops each kernel process). Sessions may share a
        kernel: the first one deleted stops it, and the others are then gone too (404)."""
        for session in self.api("GET", "/api/sessions"):
            self.delete(f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels"):
            self.delete(f"/api/kernels/{kernel['id']}")

    def delete(self, path: str) -> None:
        try:
            self.api("DELETE", path)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise

    def start_kernel(self, folder: str) -> str:
        """A new python3 kernel working in `folder` (relative to root); its id."""
        return self.api("POST", "/api/kernels", {"name": "python3", "path": folder})["id"]

    def attach(self, path: str, kernel_id: str) -> None:
        """A session for the notebook at `path` on kernel `kernel_id`: JupyterLab connects to it when it opens
        the notebook, instead of starting a new kernel."""
        self.api("POST", "/api/sessions", {"path": path, "type": "notebook", "name": Path(path).name,
                                           "kernel": {"id": kernel_id}})

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


def write_settings(settings: Path) -> None:
    """Keep every cell in the DOM (a user setting of the tests' own; the news question is answered by the
    series' configuration, tools/dev.py's LAB_SETTINGS, as in `make lab` and on Binder)."""
    presets = {
        "notebook-extension/tracker": {"windowingMode": "none"},
    }
    for name, values in presets.items():
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def stop_by_pid(pids: list[int], timeout: float = 10) -> None:
    """SIGTERM each pid, wait, then SIGKILL the survivors (only pids we started, or our server's kernels)."""
    import psutil

    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
            processes[-1].terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=timeout)


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    require_chromium()
    import psutil

    tmp = tmp_path_factory.mktemp("lab")
    root = tmp / "root"
    shutil.copytree(NOTEBOOKS, series.notebooks(root=root), ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    env = dict(os.environ)
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"), ("IPYTHONDIR", "ipython")]:
        (tmp / sub).mkdir()
        env[var] = str(tmp / sub)
    write_settings(tmp / "settings")
    dev.jupyter_config(tmp / "config", sys.executable)  # the configuration of `make lab` and Binder
    token, port = secrets.token_hex(24), free_port()
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True"]  # tests read kernel state
    if os.getuid() == 0:
        command.append("--allow-root")
    log = tmp / "jupyterlab.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
    server = Lab(f"http://127.0.0.1:{port}", token, root, process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with code {process.returncode}:\n{server.log_tail()}")
            try:
                server.api("GET", "/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer on {server.url} within 60 s:\n{server.log_tail()}")
                time.sleep(0.2)
        yield server
    finally:
        try:
            if process.poll() is None:
                server.shutdown_kernels()
        except (urllib.error.URLError, OSError):
            pass
        try:
            children = [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            children = []
        stop_by_pid([process.pid])
        process.wait(timeout=1)
        stop_by_pid(children)  # kernels the server did not stop


def japanese_fonts(tmp: Path) -> Path:
    """A fontconfig file adding the IPAexGothic font that matplotlib_fontja ships, so 犬 猫 鳥 render in code cells."""
    fonts = Path(importlib.util.find_spec("matplotlib_fontja").origin).parent / "fonts"
    config = tmp / "fonts.conf"
    config.write_text(f"""<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>{fonts}</dir>
  <cachedir>{tmp / "fontconfig-cache"}</cachedir>
</fontconfig>
""")
    return config


@pytest.fixture(scope="package")
def playwright_driver() -> Iterator[object]:
    """One Playwright driver for the package (a second sync_playwright() in the same thread is refused)."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        yield playwright
    finally:
        playwright.stop()


@pytest.fixture(scope="package")
def browser(playwright_driver, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    with chromium_with_fonts(playwright_driver, japanese_fonts(tmp_path_factory.mktemp("fonts"))) as chromium:
        yield chromium


@pytest.fixture(scope="package")
def lab_page(lab: Lab, browser) -> Iterator[object]:
    """One JupyterLab page for the package: the app loads once, and each test opens its notebook in it."""
    context, page = new_page(browser)
    try:
        page.goto(f"{lab.url}/lab?reset&token={lab.token}")
        page.wait_for_function("() => Boolean(window.jupyterapp?.shell)", timeout=60_000)
        page.evaluate("() => window.jupyterapp.restored")
        page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")  # room for cells
        yield page
    finally:
        context.close()


@pytest.fixture(scope="package")
def chapters_kernel(lab: Lab) -> Iterator[str]:
    """One kernel, working in notebooks/, for every chapter the browser tests open, so that each pays no kernel
    start and no torch import. nbval runs each chapter whole in a fresh kernel; here each chapter runs its own
    set-up cells again before its explorers."""
    kernel = lab.start_kernel(series.NOTEBOOKS)
    yield kernel
    lab.shutdown_kernels()


@pytest.fixture(scope="package")
def artifacts() -> Path:
    artifacts = ROOT / "test-artifacts" / "browser"
    artifacts.mkdir(parents=True, exist_ok=True)
    return artifacts


@pytest.fixture(scope="package")
def small_site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """The small book site (chapters SITE_CHAPTERS and every other page, both editions), built once for the site
    tests and the print test: (its folder, each edition's Sphinx warnings)."""
    out = tmp_path_factory.mktemp("site") / "site"
    return out, site.build(out, SITE_CHAPTERS)
