"""A full disk, for real: the data directory on a small tmpfs (mounting one needs root). Ingest
until it is full; the client gets a 507 naming the problem, nothing is half-written, and once
the tmpfs grows the server goes on without a restart."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparqlrag.server.state import app_state
from sparqlrag.store.base import DISK_FULL
from tests.conftest import TEST_DATA, LiveServer, start_server

CORPUS = TEST_DATA / "musique" / "corpus.jsonl"
UPDATE = {"Content-Type": "application/sparql-update"}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12M", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=True)


def _grow(disk: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=96M", str(disk)], check=True)


def test_a_full_disk_is_a_507_that_writes_nothing_and_the_server_goes_on_once_space_is_freed(
    small_disk: Path,
) -> None:
    server: LiveServer
    server, stop = start_server(small_disk / "data")
    passages = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    try:
        with server.client() as client:
            statuses = []
            for number, passage in enumerate(passages[:600]):
                document = {"id": f"d{number}", "text": f"{passage['title']}. {passage['text']}"}
                response = client.post("/api/v1/documents", json=document)
                statuses.append(response.status_code)
                if response.status_code != 201:
                    break
            full = response
            assert full.status_code == 507, (statuses[-3:], full.text)
            assert full.json() == {"error": "insufficient_storage", "detail": DISK_FULL}
            assert set(statuses[:-1]) == {201} and len(statuses) > 5
            refused = client.post("/sparql", content='INSERT DATA { <urn:x> <urn:y> "z" }', headers=UPDATE)
            assert refused.status_code == 507, refused.text
            ask = client.get("/sparql", params={"query": "ASK { <urn:x> ?p ?o }"})
            assert ask.status_code == 200 and ask.json()["boolean"] is False  # the refused update wrote nothing
            _grow(small_disk)
            deadline, retried = time.monotonic() + 30, None
            while time.monotonic() < deadline:  # the store process starts again within seconds
                retried = client.post("/api/v1/documents", json=document)
                if retried.status_code != 503:
                    break
                time.sleep(0.5)
            assert retried is not None
            assert retried.status_code == 201, retried.text
            applied = client.post("/sparql", content='INSERT DATA { <urn:x> <urn:y> "z" }', headers=UPDATE)
            assert applied.status_code == 204
            listed = client.get("/api/v1/documents").json()["documents"]
            assert {d["status"] for d in listed} == {"ready"} and len(listed) == len(statuses)
            services = app_state(server.app).services
            chunks = client.get(
                "/sparql",
                params={"query": "SELECT ?c WHERE { GRAPH ?g { ?c a <https://w3id.org/sparqlrag/ns#Chunk> } }"},
            ).json()["results"]["bindings"]
            stored = {row["c"]["value"] for row in chunks}
            assert services.vectors.iris("default", "chunks") == stored == services.keywords.iris("default")
    finally:
        stop()
