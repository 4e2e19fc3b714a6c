"""`oxigraph serve` from the `oxigraph` PyPI package, started for a test: the remote store the
tests of the scale-out keep everything in."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

OXIGRAPH = shutil.which("oxigraph") or str(Path(sys.executable).parent / "oxigraph")


def free_port() -> int:
    """A port free now; another process may take it before ours binds it (hence start_oxigraph's retries)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StoreServer:
    """A store server a test started: where it answers, and its process."""

    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


class Oxigraph(StoreServer):
    @property
    def endpoints(self) -> dict[str, Any]:
        """Settings that keep a sparqlrag server's everything in this store."""
        return {
            "store_url": self.url + "/query",
            "store_update_url": self.url + "/update",
            "store_gsp_url": self.url + "/store",
        }


def start_oxigraph(folder: Path) -> Oxigraph:
    """The server on a loopback port and `folder`, answering; skips the test where it is not installed."""
    if not Path(OXIGRAPH).exists():
        pytest.skip("the Oxigraph server is installed by `make install` (the oxigraph PyPI package)")
    for _ in range(3):  # the port is found free, then bound by another process: it may be taken meanwhile
        url = f"http://127.0.0.1:{free_port()}"
        process = subprocess.Popen(
            [OXIGRAPH, "serve", "--location", str(folder), "--bind", url.removeprefix("http://")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            try:
                httpx.get(url + "/query", params={"query": "ASK {}"}, timeout=1)
                return Oxigraph(url, process)
            except httpx.TransportError:
                time.sleep(0.05)
        process.kill()
        process.wait()
    pytest.fail("oxigraph serve did not start")
