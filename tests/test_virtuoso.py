"""The remote store on Virtuoso Open Source: a store of RDF 1.1, so provenance is kept as RDF
1.1 reification there, and the server's job must give the same answers as on its own store."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SPARQLRAG, start_server
from tests.test_remote_store import _answers, approximately
from tests.virtuoso_server import Virtuoso, start_virtuoso


@pytest.fixture(scope="module")
def virtuoso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Virtuoso]:
    running = start_virtuoso(tmp_path_factory.mktemp("virtuoso"))
    yield running
    running.stop()


def test_the_server_does_its_whole_job_on_virtuoso(virtuoso: Virtuoso, tmp_path: Path) -> None:
    base = "http://kb.example/"
    remote, stop_remote = start_server(tmp_path / "remote", base_iri=base, **virtuoso.endpoints)
    embedded, stop_embedded = start_server(tmp_path / "embedded", base_iri=base)
    try:
        on_remote, on_embedded = _answers(remote), _answers(embedded)
        assert approximately(on_remote) == on_embedded  # Virtuoso writes a double with 6 digits
        assert on_remote[1] and on_remote[2] and on_remote[5]["edges"]  # sources, facts, a trace: not all empty
        assert "wasDerivedFrom" in " ".join(on_remote[7][0])  # the document's page lists its facts' chunks
        assert on_remote[8]["edges"] and on_remote[8]["documents"]  # the explorer's picture of CERN, not empty
    finally:
        stop_remote()
        stop_embedded()


UPDATE = {"Content-Type": "application/sparql-update"}
SLOW_QUERY = (  # thousands of triples (Virtuoso's own graphs are in its default graph), cubed
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i FILTER(STR(?c) < STR(?f) && STR(?f) < STR(?i)) }"
)


def test_a_slow_query_is_cut_off_and_a_store_gone_down_is_a_502(tmp_path: Path) -> None:
    own = start_virtuoso(tmp_path / "virtuoso")  # its own: this test stops it
    server, stop = start_server(tmp_path / "data", **own.endpoints)
    try:
        with server.client() as client:
            slow = client.get("/sparql", params={"query": SLOW_QUERY, "timeout": "1"})
            assert slow.status_code == 503 and slow.json()["error"] == "query_timeout", slow.text
            assert "1 s limit" in slow.json()["detail"]
        own.process.kill()
        own.process.wait(timeout=60)
        with server.client() as client:
            for failed in (client.get("/sparql", params={"query": "ASK {}"}), client.get("/api/v1/collections")):
                assert failed.status_code == 502 and failed.json()["error"] == "store_failed", failed.text
                assert "cannot reach the store at http://127.0.0.1:" in failed.json()["detail"]
                assert "Virtuoso" not in failed.text
    finally:
        stop()


def test_the_command_line_and_the_default_graph_on_virtuoso(virtuoso: Virtuoso, tmp_path: Path) -> None:
    """Virtuoso has no default graph of its own to write to: what the default graph gets goes to
    the graph standing for it, and reads of the default graph read that one."""
    (tmp_path / "in.trig").write_text(
        '<http://e/s> <http://e/p> "default" .\n<http://e/g> { <http://e/s> <http://e/p> <http://e/o> . '
        "<http://e/r> <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> "
        "<<( <http://e/s> <http://e/p> <http://e/o> )>> }\n"
    )
    environment = {
        **os.environ,
        "SPARQLRAG_STORE_UNION_PARAMETER": "",
        "SPARQLRAG_STORE_DEFAULT_GRAPH": str(virtuoso.endpoints["store_default_graph"]),
    }
    store = ["--data-dir", str(tmp_path / "d"), "--store-url", virtuoso.url + "/sparql"]
    loaded = subprocess.run(
        [SPARQLRAG, "load", str(tmp_path / "in.trig"), *store], env=environment, capture_output=True
    )
    assert loaded.returncode == 0, loaded.stderr
    dumped = subprocess.run(
        [SPARQLRAG, "dump", "--format", "nquads", *store], env=environment, capture_output=True, text=True
    )
    assert dumped.returncode == 0, dumped.stderr
    mine = [line for line in dumped.stdout.splitlines() if "http://e/" in line]
    assert sorted(mine) == sorted(
        [
            '<http://e/s> <http://e/p> "default" .',
            "<http://e/s> <http://e/p> <http://e/o> <http://e/g> .",
            "<http://e/r> <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> "
            "<<( <http://e/s> <http://e/p> <http://e/o> )>> <http://e/g> .",
        ]
    )  # the reifier, kept as RDF 1.1 reification in Virtuoso, is read back as it was loaded
    query = "SELECT (COUNT(*) AS ?n) WHERE { GRAPH <http://e/g> { ?r ?p ?o } }"
    counted = subprocess.run(
        [SPARQLRAG, "query", query, "--format", "csv", *store], env=environment, capture_output=True, text=True
    )
    assert counted.stdout.split() == ["n", "4"], counted.stderr  # the fact, and the reifier's three triples
