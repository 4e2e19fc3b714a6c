"""The remote store against a real `oxigraph serve` (the `oxigraph` PyPI package): the same
calls as the embedded store, the same answers, and clear errors when the store is down or slow."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyoxigraph import RdfFormat

from sparqlrag.store import EmbeddedStore
from sparqlrag.store.base import DataSyntaxError, GraphNotFound, QuerySyntaxError, QueryTimeout, RemoteStoreFailed
from sparqlrag.store.remote import RemoteStore
from tests.conftest import SPARQLRAG, LiveServer, start_server
from tests.oxigraph_server import Oxigraph, free_port, start_oxigraph

TRIG = b"""@prefix ex: <http://example.org/> .
ex:s ex:p "default" .
ex:g { ex:s ex:p "named" . ex:r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( ex:s ex:p "named" )>> . }
"""
SLOW_QUERY = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"


@pytest.fixture
def oxigraph(tmp_path: Path) -> Iterator[Oxigraph]:
    """`oxigraph serve` on a loopback port and a data folder of its own."""
    running = start_oxigraph(tmp_path / "oxigraph")
    yield running
    running.stop()


@pytest.fixture
def remote(oxigraph: Oxigraph) -> Iterator[RemoteStore]:
    store = RemoteStore(oxigraph.url + "/query", update_url=oxigraph.url + "/update", gsp_url=oxigraph.url + "/store")
    yield store
    store.close()


def test_it_answers_as_the_embedded_store_does(remote: RemoteStore, tmp_path: Path) -> None:
    (tmp_path / "in.trig").write_bytes(TRIG)
    embedded = EmbeddedStore(tmp_path / "embedded")
    try:
        for store in (remote, embedded):
            store.load(tmp_path / "in.trig", RdfFormat.TRIG)
            store.update(
                'INSERT DATA { GRAPH <http://example.org/h> { <http://example.org/a> <http://example.org/b> "c" } }'
            )
        for query, accept in (
            ("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } } ORDER BY ?o", "text/csv"),
            ("ASK { GRAPH <http://example.org/g> { ?r ?p <<( ?s ?q ?o )>> } }", "application/sparql-results+json"),
            ("CONSTRUCT { ?s ?p ?o } WHERE { GRAPH <http://example.org/g> { ?s ?p ?o } }", "application/n-triples"),
            ("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "application/sparql-results+json"),
        ):
            mine, theirs = remote.query(query, accept=accept), embedded.query(query, accept=accept)
            assert (mine.kind, mine.media_type) == (theirs.kind, theirs.media_type), query
            assert sorted(mine.body.splitlines()) == sorted(theirs.body.splitlines()), query
        union = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
        assert (
            json.loads(remote.query(union, union_default_graph=True).body)["results"]["bindings"][0]["n"]["value"]
            == "4"
        )
        assert remote.named_graphs() == embedded.named_graphs() == ["http://example.org/g", "http://example.org/h"]
        for store in (remote, embedded):  # a triple two graphs state is described once over their union
            store.update(
                'INSERT DATA { GRAPH <http://example.org/g> { <http://example.org/a> <http://example.org/b> "c" } }'
            )
            described = store.query(
                "DESCRIBE <http://example.org/a>", accept="application/n-triples", union_default_graph=True
            )
            assert described.body.decode().splitlines() == ['<http://example.org/a> <http://example.org/b> "c" .']
            store.update(
                'DELETE DATA { GRAPH <http://example.org/g> { <http://example.org/a> <http://example.org/b> "c" } }'
            )
        assert remote.count() == embedded.count() == 4
        assert remote.graph_exists("http://example.org/g") and not remote.graph_exists("http://example.org/none")
        assert remote.serialize_graph("http://example.org/h", RdfFormat.N_TRIPLES) == embedded.serialize_graph(
            "http://example.org/h", RdfFormat.N_TRIPLES
        )
    finally:
        embedded.close()


def test_graph_writes_replace_add_drop_and_dump(remote: RemoteStore, tmp_path: Path) -> None:
    graph = "http://example.org/g"
    (tmp_path / "a.nt").write_text('<http://e/s> <http://e/p> "one" .\n')
    (tmp_path / "b.nt").write_text('<http://e/s> <http://e/p> "two" .\n')
    assert remote.replace_graph(graph, tmp_path / "a.nt", RdfFormat.N_TRIPLES, None) is False
    assert remote.add_to_graph(graph, tmp_path / "b.nt", RdfFormat.N_TRIPLES, None) is True
    assert remote.serialize_graph(graph, RdfFormat.N_TRIPLES).count(b"\n") == 2
    assert remote.replace_graph(graph, tmp_path / "b.nt", RdfFormat.N_TRIPLES, None) is True
    assert remote.serialize_graph(graph, RdfFormat.N_TRIPLES) == b'<http://e/s> <http://e/p> "two" .\n'
    remote.add_quads(b"<http://e/x> <http://e/y> <http://e/z> <http://example.org/q> .\n")
    remote.dump(tmp_path / "all.nq", RdfFormat.N_QUADS)
    assert sorted((tmp_path / "all.nq").read_text().splitlines()) == [
        '<http://e/s> <http://e/p> "two" <http://example.org/g> .',
        "<http://e/x> <http://e/y> <http://e/z> <http://example.org/q> .",
    ]
    remote.drop_graph(graph)
    assert remote.named_graphs() == ["http://example.org/q"]
    with pytest.raises(GraphNotFound):
        remote.drop_graph(graph)


def test_bad_input_is_refused_before_anything_is_sent(remote: RemoteStore, tmp_path: Path) -> None:
    (tmp_path / "bad.ttl").write_text("<http://e/s> <http://e/p> .")
    with pytest.raises(DataSyntaxError):
        remote.load(tmp_path / "bad.ttl", RdfFormat.TURTLE, graph="http://example.org/g")
    with pytest.raises(DataSyntaxError):
        remote.add_quads(b"not n-quads")
    with pytest.raises(QuerySyntaxError) as refused:
        remote.query("SELEC nothing")
    assert remote.name in str(refused.value) and "SELEC" not in str(refused.value)  # its words are not ours to show
    assert remote.count() == 0


def test_a_store_that_is_down_or_slow_gets_clear_errors(oxigraph: Oxigraph, tmp_path: Path) -> None:
    down = RemoteStore(f"http://127.0.0.1:{free_port()}/query", timeout=2)
    with pytest.raises(RemoteStoreFailed, match="cannot reach the store at http://127.0.0.1:"):
        down.query("ASK {}")
    with pytest.raises(RemoteStoreFailed, match="cannot reach"):
        down.update("CLEAR ALL")
    down.close()
    slow = RemoteStore(oxigraph.url + "/query", update_url=oxigraph.url + "/update", timeout=30)
    try:
        lines = "".join(f'<http://e/s{i}> <http://e/p> "{i}" .\n' for i in range(300))
        (tmp_path / "seed.nt").write_text(lines)
        slow.load(tmp_path / "seed.nt", RdfFormat.N_TRIPLES)
        with pytest.raises(QueryTimeout, match="0.5 s limit"):
            slow.query(SLOW_QUERY, timeout=0.5)
        assert slow.query("ASK { ?s ?p ?o }").body  # the store still answers
    finally:
        slow.close()


QUESTION = "Where did the inventor of the World Wide Web invent it, and where is that?"
CORPUS = Path(__file__).resolve().parents[1] / "sparqlrag" / "demo" / "corpus"


def _asked(client: httpx.Client) -> list[object]:
    """Both RAGs' answers to QUESTION in collection `lab`: the answer, the source chunks, the facts
    the walk kept, and the graph answer's trace as read back (all but its timings); the linked
    data of a document and an entity (their facts, with provenance); the explorer's picture of CERN."""
    described = [  # without the creation times (each server ingests at its own moment)
        sorted(line for line in client.get(f"/data/{path}.nt").text.splitlines() if "#dateTime>" not in line)
        for path in ("doc/lab/cern", "id/lab/tim-berners-lee")
    ]
    graph = client.post("/api/v1/graph-rag", json={"question": QUESTION, "collection": "lab"}).json()
    document = client.post("/api/v1/document-rag", json={"question": QUESTION, "collection": "lab"}).json()
    trace = client.get(f"/api/v1/traces/{graph['trace'].rsplit('/', 1)[1]}", params={"collection": "lab"}).json()
    cern = graph["trace"].split("trace/lab/")[0] + "id/lab/cern"
    explored = client.get("/api/v1/collections/lab/graph", params={"entity": cern, "depth": 2}).json()
    picture = {  # the explorer's (in the store's order, which differs: sorted)
        "nodes": sorted((n["id"], n["label"], n["degree"], n["hop"]) for n in explored["nodes"]),
        "edges": sorted(
            (e["source"], e["label"], e["target"], e["evidence"], bool(e["reifier"])) for e in explored["edges"]
        ),
        "documents": explored["documents"],
    }
    return [
        graph["answer"],
        [s["chunk"] for s in graph["sources"]],
        [(e["subject"], e["predicate"], e["object"]) for e in graph["edges"]],
        document["answer"],
        [s["chunk"] for s in document["sources"]],
        {key: trace[key] for key in ("question", "mode", "answer", "seeds", "edges", "sources")},
        sorted(trace["concepts"]),  # a set in RDF: its order is the store's
        described,
        picture,
    ]


def approximately(value: object) -> object:
    """`value` with every float compared to 5 significant digits."""
    if isinstance(value, float):
        return pytest.approx(value, rel=1e-5)
    if isinstance(value, list):
        return [approximately(item) for item in value]
    if isinstance(value, dict):
        return {key: approximately(item) for key, item in value.items()}
    return value


def _answers(server: LiveServer) -> list[Any]:
    """What a user sees of the whole cycle: ingest three demo documents into a collection, ask
    both RAGs, forget one, ask again, export the collection's core, delete the collection,
    import the core, ask again. Trace IRIs are left out (fresh each time)."""
    documents = sorted(CORPUS.glob("*.md"))[:3]
    seen: list[object] = []
    with server.client() as client:
        assert client.post("/api/v1/collections", json={"name": "lab"}).status_code == 201
        for path in documents:
            body = {"id": path.stem, "text": path.read_text()}
            response = client.post("/api/v1/documents", json=body, params={"collection": "lab"})
            assert response.status_code == 201, response.text
        seen += _asked(client)
        assert client.delete(f"/api/v1/documents/{documents[0].stem}", params={"collection": "lab"}).status_code == 204
        seen += _asked(client)
        core = client.get("/api/v1/collections/lab/core")
        assert core.status_code == 200, core.text
        assert client.delete("/api/v1/collections/lab").status_code == 204
        imported = client.post("/api/v1/collections/lab/core", content=core.content)
        assert imported.status_code == 201, imported.text
        seen += _asked(client)
        seen.append(len(client.get("/api/v1/traces", params={"collection": "lab"}).json()["traces"]))
    return seen


@pytest.mark.parametrize("triple_terms", [None, False], ids=["rdf12-probed", "rdf11-reification"])
def test_the_server_does_its_whole_job_on_oxigraph_serve(
    oxigraph: Oxigraph, tmp_path: Path, triple_terms: bool | None
) -> None:
    """Probed, the store keeps RDF 1.2 reifiers; told it has no triple terms, it keeps RDF 1.1
    reification, which Oxigraph also holds: the same answers either way."""
    base = "http://kb.example/"
    settings = {**oxigraph.endpoints, "store_triple_terms": triple_terms}
    remote, stop_remote = start_server(tmp_path / "remote", base_iri=base, **settings)
    embedded, stop_embedded = start_server(tmp_path / "embedded", base_iri=base)
    try:
        on_remote, on_embedded = _answers(remote), _answers(embedded)
        assert on_remote == on_embedded
        assert on_remote[1] and on_remote[2] and on_remote[5]["edges"]  # sources, facts, a trace: not all empty
        assert "wasDerivedFrom" in " ".join(on_remote[7][0])  # the document's page lists its facts' chunks
        assert on_remote[8]["edges"] and on_remote[8]["documents"]  # the explorer's picture of CERN, not empty
        with httpx.Client() as client:  # it is all in the remote store
            count = client.get(
                oxigraph.url + "/query", params={"query": "SELECT (COUNT(*) AS ?n) { GRAPH ?g { ?s ?p ?o } }"}
            )
            assert int(count.json()["results"]["bindings"][0]["n"]["value"]) > 100
            reifiers = "ASK { GRAPH ?g { ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> ?t } }"
            kept = client.get(oxigraph.url + "/query", params={"query": reifiers}).json()["boolean"]
            assert kept is (triple_terms is None)  # the form the store was told, or found, it keeps
    finally:
        stop_remote()
        stop_embedded()


def test_the_command_line_works_on_a_remote_store(oxigraph: Oxigraph, tmp_path: Path) -> None:
    (tmp_path / "in.trig").write_bytes(TRIG)
    store = ["--store-url", oxigraph.url + "/query", "--store-update-url", oxigraph.url + "/update"]
    run = [SPARQLRAG, "load", str(tmp_path / "in.trig"), "--data-dir", str(tmp_path / "d"), *store]
    assert subprocess.run(run, capture_output=True, text=True, timeout=120).returncode == 0
    query = [SPARQLRAG, "query", "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }", "--format", "csv"]
    counted = subprocess.run([*query, "--data-dir", str(tmp_path / "d"), *store], capture_output=True, text=True)
    assert counted.stdout.split() == ["n", "2"], counted.stderr
    down = [*query, "--data-dir", str(tmp_path / "d"), "--store-url", f"http://127.0.0.1:{free_port()}/query"]
    failed = subprocess.run(down, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and "cannot reach the store at http://127.0.0.1:" in failed.stderr
    assert "Traceback" not in failed.stderr
    for bad in ("file:///etc/passwd", "ftp://127.0.0.1/q", "localhost:7879/query"):  # never a file, never guessed
        refused = subprocess.run(
            [*query, "--data-dir", str(tmp_path / "d"), "--store-url", bad], capture_output=True, text=True
        )
        assert refused.returncode == 2 and "store_url" in refused.stderr and "http(s) URL" in refused.stderr, bad
        assert "Traceback" not in refused.stderr


def test_the_command_line_says_what_a_remote_store_needs(oxigraph: Oxigraph, tmp_path: Path) -> None:
    """Two traps of a new user (issue 37, item 5): updates sent to the query endpoint, and a
    second data directory on a store another one indexed. Each error says what to do."""
    (tmp_path / "note.txt").write_text("Ada Lovelace wrote the first program for the Analytical Engine.")
    only_query = ["--store-url", oxigraph.url + "/query"]
    store = [*only_query, "--store-update-url", oxigraph.url + "/update"]

    def run(data: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SPARQLRAG, *args, "--data-dir", str(tmp_path / data)], capture_output=True, text=True, timeout=300
        )

    refused = run("a", "ingest", str(tmp_path / "note.txt"), *only_query)
    said = refused.stdout + refused.stderr  # (the file's line, then the command's error)
    assert refused.returncode == 2 and "--store-update-url" in said and "Oxigraph: /update" in said
    assert "malformed" not in said and "Traceback" not in said
    assert run("a", "ingest", str(tmp_path / "note.txt"), *store).returncode == 0
    malformed = run("a", "update", "INSERT DATA { <http://e/s> }", *only_query)  # still its own error
    assert malformed.returncode == 2 and "--store-update-url" in malformed.stderr

    elsewhere = run("b", "ask", "Who wrote the first program?", "--mode", "document", *store)
    assert elsewhere.returncode == 0 and "sparqlrag reindex --collection default" in elsewhere.stderr
    assert run("b", "reindex", "--collection", "default", *store).returncode == 0
    found = run("b", "ask", "Who wrote the first program?", "--mode", "document", *store)
    assert found.returncode == 0 and "Ada Lovelace" in found.stdout and "reindex" not in found.stderr


def test_a_store_gone_down_is_a_502_naming_it(oxigraph: Oxigraph, tmp_path: Path) -> None:
    server, stop = start_server(tmp_path / "data", store_url=oxigraph.url + "/query")
    try:
        oxigraph.process.kill()
        oxigraph.process.wait(timeout=30)
        with server.client() as client:
            response = client.get("/sparql", params={"query": "ASK {}"})
            listed = client.get("/api/v1/collections")
        for failed in (response, listed):
            assert failed.status_code == 502 and failed.json()["error"] == "store_failed", failed.text
            assert "cannot reach the store at http://127.0.0.1:" in failed.json()["detail"]
    finally:
        stop()


def test_a_collection_token_sees_its_graphs_alone_on_the_store_of_record(oxigraph: Oxigraph, tmp_path: Path) -> None:
    """On a remote store the narrowed dataset travels as protocol parameters: the store, not
    this server, applies it, so a query naming another collection's graph must still find nothing."""
    base = "http://kb.example/"
    grants = {"finance-token": ["write:finance"]}
    server, stop = start_server(
        tmp_path / "data", base_iri=base, write_tokens=["admin"], collection_tokens=grants, **oxigraph.endpoints
    )
    try:
        with server.client("admin") as admin:
            for name, text in (("finance", "Acme Bank lends money in Oslo."), ("hr", "Mary Smith hired Tom Lund.")):
                assert admin.post("/api/v1/collections", json={"name": name}).status_code == 201
                made = admin.post(f"/api/v1/documents?collection={name}", json={"id": "d", "text": text})
                assert made.status_code == 201, made.text
        hr = base + "graph/hr"
        with server.client("finance-token") as limited:
            for query in (
                "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }",
                "SELECT ?o WHERE { ?s ?p ?o }",
                f"SELECT ?o FROM <{hr}> WHERE {{ ?s ?p ?o }}",
                f"SELECT ?g ?o FROM NAMED <{hr}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
                f"SELECT ?o WHERE {{ GRAPH <{hr}> {{ ?s ?p ?o }} }}",
            ):
                found = limited.get(
                    "/sparql", params={"query": query}, headers={"Accept": "application/sparql-results+json"}
                )
                assert found.status_code == 200, found.text
                values = [str(v["value"]) for row in found.json()["results"]["bindings"] for v in row.values()]
                assert not any("Mary" in v or v.startswith(hr) for v in values), (query, values)
            graphs = limited.get(
                "/sparql",
                params={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"},
                headers={"Accept": "application/sparql-results+json"},
            ).json()["results"]["bindings"]
            assert {row["g"]["value"] for row in graphs} >= {base + "graph/finance", base + "graph/finance/source"}
    finally:
        stop()


def test_a_big_answer_streams_through_from_the_store(oxigraph: Oxigraph, tmp_path: Path) -> None:
    """A server on a remote store passes a big answer on as the store sends it (chunked, the
    first piece out before the rest is read), complete; past the byte cap midway the client's
    connection is cut; a client that goes midway leaves the server serving."""
    server, stop = start_server(tmp_path / "data", max_result_bytes=8 << 20, **oxigraph.endpoints)
    triples = " ".join(f'<http://e/s{i}> <http://e/p> "{i}" .' for i in range(1000))
    pairs = "SELECT ?a ?b WHERE {{ ?a <http://e/p> ?x . ?b <http://e/p> ?y }} LIMIT {}"
    query = {"Content-Type": "application/sparql-query"}
    try:
        with server.client() as client:
            update = {"Content-Type": "application/sparql-update"}
            assert client.post("/sparql", content=f"INSERT DATA {{ {triples} }}", headers=update).status_code == 204
            for accept in ("application/sparql-results+json", "text/csv"):
                big = client.post("/sparql", content=pairs.format(50_000), headers={**query, "Accept": accept})
                assert big.status_code == 200 and "content-length" not in big.headers
                rows = big.json()["results"]["bindings"] if accept.endswith("json") else big.text.splitlines()[1:]
                assert len(rows) == 50_000
            construct = "CONSTRUCT { ?a <http://e/q> ?b } WHERE { ?a <http://e/p> ?x . ?b <http://e/p> ?y } LIMIT 20000"
            graph = client.post("/sparql", content=construct, headers={**query, "Accept": "application/n-triples"})
            assert graph.status_code == 200 and len(graph.text.splitlines()) == 20_000
            with pytest.raises(httpx.RemoteProtocolError):  # about 18 MB, over 8 MiB
                client.post("/sparql", content=pairs.format(200_000), headers=query)
            with client.stream("POST", "/sparql", content=pairs.format(300_000), headers=query) as response:
                assert response.status_code == 200
                next(response.iter_bytes())
            small = client.post("/sparql", content="ASK { ?s ?p ?o }", headers=query)
            assert small.status_code == 200 and small.json()["boolean"] is True
    finally:
        stop()
