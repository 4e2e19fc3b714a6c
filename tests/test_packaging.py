"""The product as users install it: the wheel, in a fresh venv outside the checkout, and the
Dockerfile that builds the image from that wheel.

The fresh venv gets sparqlrag only from the wheel; its third-party dependencies are this venv's,
reached through a .pth line (so the test downloads nothing). That .pth line is not a site
directory, so this checkout's editable install is not seen there: the test checks which
sparqlrag the fresh venv imports."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from pathlib import Path

import httpx
import pytest

from sparqlrag.server import pages
from tests.conftest import ROOT, listening_socket

PACKAGE = ROOT / "sparqlrag"


def _package_files(root: Path) -> set[str]:
    """Every file of the package but Python sources and caches, as paths inside the wheel."""
    return {
        path.relative_to(root.parent).as_posix()
        for path in root.rglob("*")
        if path.is_file() and path.suffix not in (".py", ".pyc") and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the checkout (setuptools writes build/ and egg-info beside
    its sources) with this venv's setuptools: no build isolation, so nothing is downloaded."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(PACKAGE, source / "sparqlrag", ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path_factory.mktemp("wheels")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels)]
    result = subprocess.run([*build, str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    (built,) = wheels.glob("sparqlrag-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; returns its bin folder."""
    home = tmp_path_factory.mktemp("venv")
    venv.create(home, with_pip=True)
    bin_dir = home / "bin"
    install = [str(bin_dir / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)]
    result = subprocess.run(install, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    purelib = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return bin_dir


def test_the_wheel_holds_every_file_the_package_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    assert _package_files(PACKAGE) <= names, sorted(_package_files(PACKAGE) - names)
    assert {"sparqlrag/demo/corpus/berners-lee.md", "sparqlrag/store/vocab.ttl"} <= names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


def test_the_installed_wheel_runs_the_demo_and_serves_the_editor(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run(
        [str(installed / "python"), "-c", "import sparqlrag; print(sparqlrag.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert where.startswith(str(installed.parent)) and str(ROOT) not in where  # the wheel's copy, not the checkout's
    data = tmp_path / "data"
    demo = subprocess.run(
        [str(installed / "sparqlrag"), "demo", "--no-serve", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "ready      berners-lee.md" in demo.stdout and "\nSources:\n  [1] " in demo.stdout
    sock = listening_socket()
    port = sock.getsockname()[1]
    sock.close()  # the server binds it again; nothing else on this loopback is asking for ports
    command = [str(installed / "sparqlrag"), "serve", "--port", str(port), "--data-dir", str(data)]
    server = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "the installed server did not start"
            time.sleep(0.2)
        editor = httpx.get(url).text
        script = re.search(r'<script src="([^"]*yasgui\.min\.js)"', editor)
        assert script is not None
        if (pages.YASGUI_LOCAL / "yasgui.min.js").is_file():  # this checkout has YASGUI: so has the wheel
            assert script.group(1) == "static/vendor/yasgui/yasgui.min.js"
            assert httpx.get(url + script.group(1)).content == (pages.YASGUI_LOCAL / "yasgui.min.js").read_bytes()
        else:
            assert script.group(1).startswith(pages.YASGUI_CDN)
        assert httpx.get(url + "static/editor.js").status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_the_dockerfile_installs_the_wheel_as_a_user_with_a_healthcheck() -> None:
    """No Docker daemon runs here, so the image is read, not built: what it must say."""
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    assert f"ARG YASGUI_VERSION={pages.YASGUI_VERSION}" in instructions  # the editor's files, in the wheel
    assert any(line.startswith("RUN pip wheel") for line in instructions)
    final = instructions[max(i for i, line in enumerate(instructions) if line.startswith("FROM ")) :]
    assert any(line.startswith("RUN pip install") and "/wheels/" in line for line in final)
    assert not any(line.startswith("COPY sparqlrag") for line in final)  # the image runs the wheel, not sources
    users = [line.split()[1] for line in final if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    healthcheck = next(line for line in final if line.startswith("HEALTHCHECK"))
    assert "/healthz" in healthcheck
