"""Every kind of bad request gets a JSON 4xx naming the problem, and leaves the store as it was."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest
from pydantic import BaseModel

from sparqlrag.retrieval.options import DocumentRagOptions, GraphRagOptions
from tests.conftest import LiveServer, start_server

SEED = (
    '<http://ex/s> <http://ex/p> "default" .\n'
    '<http://ex/s> <http://ex/p> "in g" <http://ex/g> .\n'
    '<http://ex/r> <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( <http://ex/s> <http://ex/p> "in g" )>> '
    "<http://ex/g> .\n"
)
BULK = "".join(
    f"<http://ex/bulk{i}> <http://ex/p> <http://ex/o> <http://ex/g> .\n" for i in range(10)
)  # > 300 bytes: bulk path
MULTIPART_GOOD_THEN_BAD = (
    "".join(
        f'--b\r\nContent-Disposition: form-data; name="{n}"; filename="{n}.ttl"\r\nContent-Type: '
        f"text/turtle\r\n\r\n{body}\r\n"
        for n, body in (("good", "<http://ex/new> <http://ex/p> 1 ."), ("bad", "<http://ex/new> <http://ex/p> ."))
    )
    + "--b--\r\n"
)
UPDATE = {"Content-Type": "application/sparql-update"}
QUERY = {"Content-Type": "application/sparql-query"}
TURTLE = {"Content-Type": "text/turtle"}


def snapshot(client: httpx.Client) -> list[str]:
    response = client.get("/store", headers={"Accept": "application/n-quads"})
    assert response.status_code == 200
    return sorted(response.text.splitlines())


@pytest.fixture(scope="module")
def small_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server, stop = start_server(
        tmp_path_factory.mktemp("small"), max_sparql_bytes=2000, max_upload_bytes=4000, bulk_load_bytes=300
    )
    yield server
    stop()


@pytest.fixture
def seeded(small_server: LiveServer) -> Iterator[httpx.Client]:
    with small_server.client() as client:
        response = client.put("/store", content=SEED, headers={"Content-Type": "application/n-quads"})
        assert response.status_code == 204, response.text
        yield client


BAD_REQUESTS = [
    # (id, method, path, headers, body, status, error, words in detail)
    ("query-syntax", "GET", "/sparql?query=SELECT%20*%20WHERE%20%7B", {}, None, 400, "syntax_error", "1:"),
    ("query-misspelt", "GET", "/sparql?query=SELEC%20*%20WHERE%20%7B%7D", {}, None, 400, "syntax_error", "not 'SELEC'"),
    (
        "update-sent-as-query",
        "POST",
        "/sparql",
        {"Content-Type": "application/sparql-query"},
        "DELETE WHERE { ?s ?p ?o }",
        400,
        "syntax_error",
        "this is an update (DELETE), not a query",
    ),
    (
        "update-syntax",
        "POST",
        "/sparql",
        UPDATE,
        "INSERT DATA { <http://a> <http://b> }",
        400,
        "syntax_error",
        "update",
    ),
    (
        "update-half-bad",
        "POST",
        "/sparql",
        UPDATE,
        'DROP ALL ; INSERT DATA { <http://a> <http://b> "c" } ; CLEAR XYZ',
        400,
        "syntax_error",
        "",
    ),
    (
        "form-both",
        "POST",
        "/sparql",
        {"Content-Type": "application/x-www-form-urlencoded"},
        "query=ASK{}&update=DROP%20ALL",
        400,
        "bad_request",
        "not both",
    ),
    (
        "form-empty",
        "POST",
        "/sparql",
        {"Content-Type": "application/x-www-form-urlencoded"},
        "x=1",
        400,
        "bad_request",
        "neither",
    ),
    (
        "form-not-utf8",
        "POST",
        "/sparql",
        {"Content-Type": "application/x-www-form-urlencoded"},
        "query=%FF",
        400,
        "bad_encoding",
        "UTF-8",
    ),
    ("body-not-utf8", "POST", "/sparql", QUERY, b"ASK { \xff }", 400, "bad_encoding", "UTF-8"),
    (
        "charset",
        "POST",
        "/sparql",
        {"Content-Type": "application/sparql-update; charset=latin-1"},
        "DROP ALL",
        415,
        "unsupported_charset",
        "latin-1",
    ),
    (
        "media-type",
        "POST",
        "/sparql",
        {"Content-Type": "text/plain"},
        "DROP ALL",
        415,
        "unsupported_media_type",
        "text/plain",
    ),
    ("no-media-type", "POST", "/sparql", {}, "DROP ALL", 415, "unsupported_media_type", "none was given"),
    ("two-queries", "GET", "/sparql?query=ASK%7B%7D&query=ASK%7B%7D", {}, None, 400, "bad_request", "exactly one"),
    ("update-by-get", "GET", "/sparql?update=DROP%20ALL", {}, None, 405, "method_not_allowed", "POST"),
    ("put-sparql", "PUT", "/sparql", UPDATE, "DROP ALL", 405, "method_not_allowed", ""),
    ("direct-plus-form", "POST", "/sparql?update=DROP%20ALL", QUERY, "ASK {}", 400, "bad_request", "cannot also carry"),
    (
        "conflict",
        "POST",
        "/sparql?using-graph-uri=http%3A%2F%2Fex%2Fg",
        UPDATE,
        "WITH <http://ex/g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        400,
        "dataset_conflict",
        "WITH",
    ),
    (
        "bad-using-iri",
        "POST",
        "/sparql?using-graph-uri=not%20an%20iri",
        UPDATE,
        "DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        400,
        "syntax_error",
        "IRI",
    ),
    (  # schemathesis: a dataset with no query was ignored (issue 18)
        "dataset-without-query",
        "GET",
        "/sparql?default-graph-uri=http%3A%2F%2Fex%2Fg",
        {},
        None,
        400,
        "bad_request",
        "default-graph-uri goes with a query",
    ),
    (  # schemathesis: ignored (the service description answered) while the schema says it is >= 0.1
        "timeout-without-a-query",
        "GET",
        "/sparql?timeout=-0.9",
        {},
        None,
        400,
        "bad_request",
        "timeout goes with a query",
    ),
    (  # schemathesis: a stream that is not a boolean was taken as false (issue 18)
        "stream-not-boolean",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "stream": {}}',
        400,
        "bad_request",
        "stream must be true or false",
    ),
    (  # schemathesis: an empty collection name was taken for `default` (issue 18)
        "empty-collection-name",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "collection": ""}',
        400,
        "bad_collection",
        "collection names are",
    ),
    (  # schemathesis: a collection name that is no string was read as one (issue 18)
        "collection-not-a-string",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "collection": 0}',
        400,
        "bad_collection",
        "collection must be a string",
    ),
    (  # schemathesis: false was taken for MMR's lambda 0 (issue 18)
        "mmr-not-a-number",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "mmr": false}',
        400,
        "bad_request",
        "mmr must be a number from 0 to 1 or null",
    ),
    (
        "k-as-text",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "k": "5"}',
        400,
        "bad_request",
        "k must be an integer from 1 to 100",
    ),
    (  # issue 52's new option: a count, bounded, never a string, boolean or fraction
        "bridges-too-many",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "bridges": 11}',
        400,
        "bad_request",
        "bridges must be an integer from 0 to 10",
    ),
    (
        "bridges-not-a-count",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "bridges": true}',
        400,
        "bad_request",
        "bridges must be an integer from 0 to 10",
    ),
    (
        "bridges-negative",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "bridges": -1, "mode": "evidence"}',
        400,
        "bad_request",
        "bridges must be an integer from 0 to 10",
    ),
    (
        "mode-unknown",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "mode": "evidences"}',
        400,
        "bad_request",
        "mode must be",
    ),
    (
        "rerank-not-boolean",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "rerank": "yes"}',
        400,
        "bad_request",
        "rerank must be true or false",
    ),
    (  # the schema says so now: "not": {"items": {"maximum": 0}}
        "weights-both-zero",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "weights": [0, 0.0]}',
        400,
        "bad_request",
        "not both zero",
    ),
    (  # a misspelt option was ignored without a word; now it is named (issue 38)
        "unknown-rag-option",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Warsaw?", "rerank_": true}',
        400,
        "bad_request",
        "rerank_ is not one of this request's fields",
    ),
    (  # the same for an upload: nothing is ingested (issue 38)
        "unknown-upload-field",
        "POST",
        "/api/v1/documents",
        {"Content-Type": "application/json"},
        '{"id": "misspelt", "text": "Ada Lovelace was born in London.", "titel": "Ada"}',
        400,
        "bad_request",
        "titel is not one of this request's fields",
    ),
    (  # a number is no document id (the route turned it into one with str())
        "upload-id-not-a-string",
        "POST",
        "/api/v1/documents",
        {"Content-Type": "application/json"},
        '{"id": 7, "text": "Ada Lovelace was born in London."}',
        400,
        "bad_request",
        "id must be a string",
    ),
    (  # schemathesis found this one a 500 (issue 18)
        "empty-dataset-iris",
        "GET",
        "/sparql?query=ASK%7B%7D&default-graph-uri=&named-graph-uri=",
        {},
        None,
        400,
        "syntax_error",
        "default-graph-uri: not a valid absolute IRI",
    ),
    (
        "relative-named-graph-iri",
        "POST",
        "/sparql?named-graph-uri=graph%2F1",
        QUERY,
        "ASK {}",
        400,
        "syntax_error",
        "named-graph-uri: not a valid absolute IRI",
    ),
    (
        "service",
        "GET",
        "/sparql?query=SELECT%20*%20%7B%20SERVICE%20%3Chttp%3A%2F%2Fx%2F%3E%20%7B%3Fs%20%3Fp%20%3Fo%7D%7D",
        {},
        None,
        403,
        "remote_access_refused",
        "SERVICE",
    ),
    ("load", "POST", "/sparql", UPDATE, "LOAD <http://example.org/x.ttl>", 403, "remote_access_refused", "LOAD"),
    ("timeout-param", "GET", "/sparql?query=ASK%7B%7D&timeout=soon", {}, None, 400, "bad_request", "timeout"),
    ("timeout-too-big", "GET", "/sparql?query=ASK%7B%7D&timeout=100000", {}, None, 400, "bad_request", "between"),
    ("timeout-too-small", "GET", "/sparql?query=ASK%7B%7D&timeout=5e-324", {}, None, 400, "bad_request", "between 0.1"),
    (
        "not-acceptable",
        "GET",
        "/sparql?query=SELECT%20*%20%7B%7D",
        {"Accept": "image/png"},
        None,
        406,
        "not_acceptable",
        "image/png",
    ),
    (
        "jsonld-triple-term",
        "GET",
        "/sparql?" + urlencode({"query": "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } }"}),
        {"Accept": "application/ld+json"},
        None,
        406,
        "not_acceptable",
        "JSON-LD",
    ),
    (
        "sparql-too-large",
        "POST",
        "/sparql",
        UPDATE,
        "INSERT DATA { " + "<http://a> <http://b> <http://c> . " * 100 + "}",
        413,
        "body_too_large",
        "2000",
    ),
    (
        "gsp-bad-turtle",
        "PUT",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        TURTLE,
        "<http://a> <http://b> .",
        400,
        "invalid_rdf",
        "line 1",
    ),
    (
        "gsp-post-bad-turtle",
        "POST",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        TURTLE,
        "<http://a> <http://b> .",
        400,
        "invalid_rdf",
        "line 1",
    ),
    (
        "gsp-media-type",
        "PUT",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Content-Type": "application/pdf"},
        "%PDF",
        415,
        "unsupported_media_type",
        "application/pdf",
    ),
    (
        "gsp-quads-into-graph",
        "PUT",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Content-Type": "application/trig"},
        "{}",
        415,
        "unsupported_media_type",
        "application/trig",
    ),
    (
        "gsp-put-dataset-turtle",
        "PUT",
        "/store",
        TURTLE,
        "<http://a> <http://b> <http://c> .",
        415,
        "unsupported_media_type",
        "PUT /store",
    ),
    (
        "gsp-dataset-bad-trig",
        "PUT",
        "/store",
        {"Content-Type": "application/trig"},
        "<http://g> { <http://a> <http://b> }",
        400,
        "invalid_rdf",
        "TriG",
    ),
    (
        "gsp-bulk-bad-last-line",
        "POST",
        "/store",
        {"Content-Type": "application/n-quads"},
        BULK + "<http://ex/oops> .\n",
        400,
        "invalid_rdf",
        "line 11",
    ),
    (
        "gsp-missing-graph",
        "GET",
        "/store?graph=http%3A%2F%2Fex%2Fmissing",
        {},
        None,
        404,
        "graph_not_found",
        "http://ex/missing",
    ),
    (
        "gsp-delete-missing",
        "DELETE",
        "/store?graph=http%3A%2F%2Fex%2Fmissing",
        {},
        None,
        404,
        "graph_not_found",
        "http://ex/missing",
    ),
    ("gsp-delete-dataset", "DELETE", "/store", {}, None, 400, "bad_request", "needs a graph"),
    ("gsp-bad-iri", "GET", "/store?graph=not%20an%20iri", {}, None, 400, "syntax_error", "IRI"),
    ("gsp-two-names", "GET", "/store?graph=http%3A%2F%2Fex%2Fg&default", {}, None, 400, "bad_request", "once"),
    (
        "gsp-accept",
        "GET",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Accept": "text/html"},
        None,
        406,
        "not_acceptable",
        "text/turtle",
    ),
    (
        "gsp-too-large",
        "PUT",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        TURTLE,
        "<http://a> <http://b> <http://c> . " * 200,
        413,
        "body_too_large",
        "4000",
    ),
    (
        "gsp-multipart-bad-part",
        "POST",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Content-Type": "multipart/form-data; boundary=b"},
        MULTIPART_GOOD_THEN_BAD,
        400,
        "invalid_rdf",
        "line 1",
    ),
    (
        "gsp-multipart-no-length",
        "POST",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Content-Type": "multipart/form-data; boundary=x", "Transfer-Encoding": "chunked"},
        None,
        411,
        "length_required",
        "Content-Length",
    ),
    ("unknown-route", "GET", "/nowhere", {}, None, 404, "not_found", ""),
]


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=[c[0] for c in BAD_REQUESTS])
def test_bad_request_is_a_clear_4xx_and_changes_nothing(seeded: httpx.Client, case: tuple) -> None:
    _, method, path, headers, body, status, error, words = case
    before = snapshot(seeded)
    content = body.encode() if isinstance(body, str) else body
    response = seeded.request(method, path, headers=headers, content=content)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    payload = response.json()
    assert payload["error"] == error
    assert words in payload["detail"]
    assert "upload-" not in payload["detail"] and "part-" not in payload["detail"]
    assert snapshot(seeded) == before


def test_chunked_upload_over_limit_is_cut_off(seeded: httpx.Client) -> None:
    before = snapshot(seeded)

    def chunks() -> Iterator[bytes]:
        for _ in range(200):  # 7,000 bytes against a 4,000 byte limit
            yield b"<http://a> <http://b> <http://c> . "

    response = seeded.put("/store?graph=http%3A%2F%2Fex%2Fg", content=chunks(), headers=TURTLE)
    assert response.status_code == 413
    assert snapshot(seeded) == before


def test_no_transaction_upload_loads_with_the_bulk_loader(seeded: httpx.Client) -> None:
    response = seeded.post("/store?no_transaction", content=BULK, headers={"Content-Type": "application/n-quads"})
    assert response.status_code == 204
    assert len(snapshot(seeded)) == 3 + 10
    bad = seeded.post("/store?no_transaction", content="nonsense", headers={"Content-Type": "application/n-quads"})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_rdf"


def test_a_large_graph_put_goes_in_bulk_and_bad_data_still_writes_nothing(seeded: httpx.Client) -> None:
    """Past bulk_load_bytes a graph's PUT is checked, cleared and bulk-loaded (not a scratch
    graph MOVEd in): the graph is replaced, others stay, and a syntax error at its end changes nothing."""
    triples = "".join(f"<http://ex/big{i}> <http://ex/p> <http://ex/o> .\n" for i in range(10))  # > 300 bytes
    before = snapshot(seeded)
    bad = seeded.put(
        "/store?graph=http%3A%2F%2Fex%2Fg", content=triples + "<http://ex/x> <http://ex/p> .\n", headers=TURTLE
    )
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_rdf"
    assert snapshot(seeded) == before
    response = seeded.put("/store?graph=http%3A%2F%2Fex%2Fg", content=triples, headers=TURTLE)
    assert response.status_code == 204
    after = snapshot(seeded)
    assert sorted(line for line in after if "<http://ex/g>" in line) == sorted(
        f"<http://ex/big{i}> <http://ex/p> <http://ex/o> <http://ex/g> ." for i in range(10)
    )
    assert [line for line in after if "<http://ex/g>" not in line] == [
        line for line in before if "<http://ex/g>" not in line
    ]


def test_direct_graph_path_that_is_no_iri_is_refused(seeded: httpx.Client, small_server: LiveServer) -> None:
    """Clients that do not percent-encode can send characters an IRI cannot hold."""
    before = snapshot(seeded)
    host, port = small_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"PUT /store/a{b} HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/turtle\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n"
        )
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"not a valid absolute IRI" in body
    assert snapshot(seeded) == before


def test_a_whole_number_written_with_a_fraction_is_an_integer(seeded: httpx.Client) -> None:
    """JSON Schema's "integer" takes 70.0; so does the server (schemathesis found it refused)."""
    body = {"question": "Where is Warsaw?", "triple_limit": 70.0, "k": 3.0}
    assert seeded.post("/api/v1/graph-rag", json=body).status_code == 200
    refused = seeded.post("/api/v1/graph-rag", json=body | {"k": 3.5})
    assert refused.status_code == 400 and "k must be an integer from 1 to 100" in refused.json()["detail"]


def test_an_empty_update_is_valid_sparql_and_changes_nothing(seeded: httpx.Client) -> None:
    """SPARQL 1.1's grammar allows an update with no operation; the schema now says so too."""
    before = snapshot(seeded)
    assert seeded.post("/sparql", content="", headers=UPDATE).status_code == 204
    assert seeded.post("/sparql", data={"update": ""}).status_code == 204
    assert snapshot(seeded) == before


@pytest.mark.parametrize(
    ("path", "model"), [("/api/v1/graph-rag", GraphRagOptions), ("/api/v1/document-rag", DocumentRagOptions)]
)
def test_the_routes_take_the_models_limits(seeded: httpx.Client, path: str, model: type[BaseModel]) -> None:
    """The route's check is the model's: its highest k is taken, one more is refused in its words."""
    (highest,) = [rule.le for rule in model.model_fields["k"].metadata if hasattr(rule, "le")]
    taken = seeded.post(path, json={"question": "Where is Warsaw?", "k": highest})
    assert taken.status_code == 200, taken.text
    refused = seeded.post(path, json={"question": "Where is Warsaw?", "k": highest + 1})
    assert refused.status_code == 400
    assert f"k must be an integer from 1 to {highest}" in refused.json()["detail"]
