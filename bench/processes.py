"""Processes the benches run and watch: `sparqlrag serve` on a free port, and the RSS of a process tree."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

SPARQLRAG = str(Path(sys.executable).with_name("sparqlrag"))


def tree_rss_kb(root: int) -> int:
    """VmRSS of `root` and every process below it, in kB (0 once it is gone)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parents[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid and child not in tree]
        tree.update(children)
        frontier += children
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


class RssSampler:
    """The process tree's RSS every `every` seconds, in a thread; `peak` and `now()` in MB."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def now(self) -> float:
        return tree_rss_kb(self.pid) / 1024

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, self.now())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def server_log(data: Path) -> Path:
    return data.with_name(data.name + ".log")


@contextmanager
def server(
    data: Path, base_iri: str, env: dict[str, str] | None = None
) -> Iterator[tuple[httpx.Client, subprocess.Popen[bytes]]]:
    """`sparqlrag serve` on a free loopback port, until the block ends (SIGTERM: an orderly stop).
    Its log goes to `<data>.log` beside the data directory (appended: one file over restarts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [SPARQLRAG, "serve", "--data-dir", str(data), "--base-iri", base_iri, "--port", str(port)]
    with server_log(data).open("ab") as log:
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=600)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("sparqlrag serve did not start")
            time.sleep(0.2)
        yield client, process
    finally:
        client.close()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=120)
