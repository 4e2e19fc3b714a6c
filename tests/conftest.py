"""Shared fixtures: a real server (uvicorn, real HTTP, WorkerStore on disk) per test module."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from pyoxigraph import RdfFormat

from sparqlrag.config import Settings
from sparqlrag.models.embedder import Embedder
from sparqlrag.server.app import create_app
from sparqlrag.server.http_protocol import uvicorn_config
from sparqlrag.server.state import app_state
from sparqlrag.store import EmbeddedStore, WorkerStore

ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = ROOT / "tests" / "data"  # what the tests read, shipped with them (tests/data/README.md)
SPARQLRAG = str(Path(sys.executable).parent / "sparqlrag")
CALLERS_SETTINGS = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL")


def pytest_configure(config: pytest.Config) -> None:
    """The caller's shell does not configure the code under test: settings from the environment
    (SPARQLRAG_*) and LLM keys are removed before any fixture builds Settings or starts a CLI."""
    for name in list(os.environ):
        if name.startswith("SPARQLRAG_") or name in CALLERS_SETTINGS:
            del os.environ[name]


UNIT = Path(__file__).resolve().parent / "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests outside tests/unit use real parts (models, stores on disk, servers, subprocesses):
    marked slow, so `pytest -m "not slow"` (or `pytest tests/unit`) is the seconds-long tier."""
    for item in items:
        if UNIT not in item.path.parents:
            item.add_marker(pytest.mark.slow)


@dataclass
class LiveServer:
    url: str
    settings: Settings
    app: Any

    @property
    def sparql(self) -> str:
        return self.url + "/sparql"

    @property
    def gsp(self) -> str:
        return self.url + "/store"

    def client(self, token: str | None = None, **kwargs: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, **{"timeout": 60, **kwargs})

    @property
    def store(self) -> Any:
        return app_state(self.app).store

    def dataset(self, token: str | None = None) -> str:
        """The whole store as N-Quads: what a refused request must leave as it was."""
        with self.client(token) as client:
            response = client.get("/store", headers={"Accept": "application/n-quads"})
            assert response.status_code == 200, response.text
            return response.text


def listening_socket() -> socket.socket:
    """A loopback socket on a free port, bound before anything learns the port: handed to
    uvicorn as it is, so no other process can take the port between finding and binding it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    return sock


def serve_in_thread(
    app: Any, sock: socket.socket, what: str = "test server", settings: Settings | None = None
) -> Callable[[], None]:
    """Serves `app` on `sock` in a thread until the returned stop() is called (with the server's
    uvicorn configuration when its `settings` are given); fails within a minute, naming `what`,
    if it does not start."""
    options: dict[str, Any] = {"log_level": "warning", "access_log": False}
    config = uvicorn_config(app, settings, **options) if settings else uvicorn.Config(app, **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the {what} did not start")
        time.sleep(0.02)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()

    return stop


def start_server(data_dir: Path, own_base_iri: bool = False, **settings: Any) -> tuple[LiveServer, Callable[[], None]]:
    """A server in a thread; `own_base_iri`: its base IRI is its own URL (IRIs dereferenceable in tests)."""
    sock = listening_socket()
    port = sock.getsockname()[1]
    if own_base_iri:
        settings["base_iri"] = f"http://127.0.0.1:{port}/"
    config_settings = Settings(data_dir=data_dir, port=port, **settings)
    app = create_app(config_settings)
    stop = serve_in_thread(app, sock, settings=config_settings)
    return LiveServer(f"http://127.0.0.1:{port}", config_settings, app), stop


def restarted(store: Any, restarts: int) -> bool:
    """Waits (a minute at most) until the worker store has restarted its process `restarts`
    times: a deadline kill is noticed, and the process restarted, after the caller is answered."""
    with store._state:
        return bool(store._state.wait_for(lambda: store.restarts >= restarts, timeout=60))


def seeded_worker(folder: Path, predicates: int = 1) -> WorkerStore:
    """A worker store on `folder` holding 2,000 triples over `predicates` predicates: enough that
    a cross-product query runs for seconds (the tests and bench/timeouts.py cut such queries off)."""
    seed = EmbeddedStore(folder / "store")
    lines = "".join(
        f'<http://e/s{i}> <http://e/p{i % predicates if predicates > 1 else ""}> "{i}" .\n' for i in range(2000)
    )
    (folder / "seed.nt").write_text(lines)
    seed.load(folder / "seed.nt", RdfFormat.N_TRIPLES)
    seed.close()
    return WorkerStore(folder / "store", threads=4)


@contextmanager
def unstartable(worker: WorkerStore, store_dir: Path) -> Iterator[None]:
    """The store worker killed, and its store unopenable until the block ends: the running child
    kept its open files, and a new one cannot open what is there now."""
    aside = store_dir.with_name(store_dir.name + ".aside")
    store_dir.rename(aside)
    store_dir.write_text("not a store")
    os.kill(worker._worker.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
    with worker._state:
        assert worker._state.wait_for(lambda: worker._failure is not None, timeout=60)
    try:
        yield
    finally:
        store_dir.unlink()
        aside.rename(store_dir)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """An open server (no tokens) on its own data directory, shared by one test module."""
    server, stop = start_server(tmp_path_factory.mktemp("data"))
    yield server
    stop()


@pytest.fixture
def clean_server(live_server: LiveServer) -> LiveServer:
    """The module's server with an empty store."""
    with live_server.client() as client:
        response = client.post("/sparql", content="DROP ALL", headers={"Content-Type": "application/sparql-update"})
        assert response.status_code == 204, response.text
    return live_server


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The offline MiniLM, loaded once per test module (its cache starts empty in each)."""
    return Embedder(models_dir=tmp_path_factory.mktemp("models"))


@pytest.fixture
def client(server: LiveServer) -> Iterator[httpx.Client]:
    """A client of the module's `server` fixture (each HTTP test module starts its own)."""
    with server.client() as c:
        yield c


ADMIN = "admin-token"  # the write token of the modules whose server has tokens and takes the `admin` fixture


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    """A client of the module's `server` with the ADMIN token."""
    with server.client(ADMIN) as c:
        yield c


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium (a selenium WebDriver: tests/browser.py), one per test module."""
    from tests.browser import chromium

    yield from chromium()
