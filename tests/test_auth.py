"""Bearer tokens: reads need `read`, every write path needs `write`; open binds are refused."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sparqlrag.config import Settings
from sparqlrag.server.auth import token_cookie
from tests.conftest import SPARQLRAG, LiveServer, start_server

READ, WRITE = "reader-token", "writer-token"
NT = {"Content-Type": "application/n-triples"}
TRIPLE = "<http://ex/a> <http://ex/b> <http://ex/c> .\n"
ONTOLOGY = (
    "<http://ex/onto> a <http://www.w3.org/2002/07/owl#Ontology> . "
    "<http://ex/A> a <http://www.w3.org/2002/07/owl#Class> .\n"
)
MULTIPART_BODY = (
    '--b\r\nContent-Disposition: form-data; name="f"; filename="f.nt"\r\nContent-Type: application/n-triples\r\n\r\n'
    + TRIPLE
    + "\r\n--b--\r\n"
)

WRITES = [
    (
        "update-direct",
        "POST",
        "/sparql",
        {"Content-Type": "application/sparql-update"},
        'INSERT DATA { <http://ex/x> <http://ex/y> "z" }',
    ),
    ("update-form", "POST", "/sparql", {"Content-Type": "application/x-www-form-urlencoded"}, "update=CLEAR%20DEFAULT"),
    ("gsp-put", "PUT", "/store?graph=http%3A%2F%2Fex%2Fg", NT, TRIPLE),
    ("gsp-post", "POST", "/store?graph=http%3A%2F%2Fex%2Fg", NT, TRIPLE),
    (
        "gsp-post-multipart",
        "POST",
        "/store?graph=http%3A%2F%2Fex%2Fg",
        {"Content-Type": "multipart/form-data; boundary=b"},
        MULTIPART_BODY,
    ),
    ("gsp-put-direct", "PUT", "/store/graphs/one", NT, TRIPLE),
    ("gsp-put-default", "PUT", "/store?default", NT, TRIPLE),
    ("gsp-delete", "DELETE", "/store?graph=http%3A%2F%2Fex%2Fg", {}, None),
    ("gsp-create", "POST", "/store", NT, TRIPLE),
    (
        "dataset-post",
        "POST",
        "/store",
        {"Content-Type": "application/n-quads"},
        "<http://ex/a> <http://ex/b> <http://ex/c> <http://ex/g> .\n",
    ),
    (
        "document-upload",
        "POST",
        "/api/v1/documents",
        {"Content-Type": "application/json"},
        '{"id": "d", "text": "Oslo is in Norway."}',
    ),
    ("document-reingest", "POST", "/api/v1/documents/d/reingest", {}, None),
    ("document-delete", "DELETE", "/api/v1/documents/d", {}, None),
    ("collection-create", "POST", "/api/v1/collections", {"Content-Type": "application/json"}, '{"name": "c"}'),
    ("collection-delete", "DELETE", "/api/v1/collections/c", {}, None),
    (
        "dataset-put",
        "PUT",
        "/store",
        {"Content-Type": "application/n-quads"},
        "<http://ex/a> <http://ex/b> <http://ex/c> <http://ex/g> .\n",
    ),
    ("ontology-upload", "POST", "/api/v1/ontologies?name=tiny", {"Content-Type": "text/turtle"}, ONTOLOGY),
    (
        "ontology-put",
        "PUT",
        "/api/v1/ontologies/tiny",
        {"Content-Type": "text/turtle"},
        ONTOLOGY + "<http://ex/B> a <http://www.w3.org/2002/07/owl#Class> .\n",
    ),
    ("ontology-delete", "DELETE", "/api/v1/ontologies/tiny", {}, None),
]
READS = [
    ("ontologies-list", "GET", "/api/v1/ontologies", {}, None),
    ("query-get", "GET", "/sparql?query=ASK%7B%7D", {}, None),
    ("query-post", "POST", "/sparql", {"Content-Type": "application/sparql-query"}, "ASK {}"),
    ("service-description", "GET", "/sparql", {}, None),
    ("gsp-get", "GET", "/store?default", {}, None),
    ("gsp-head", "HEAD", "/store?default", {}, None),
    ("dataset-get", "GET", "/store", {}, None),
    ("documents-list", "GET", "/api/v1/documents", {}, None),
    ("collections-list", "GET", "/api/v1/collections", {}, None),
    # past the token check: the collection has no entities by now (graph mode: 409, not 401/403)
    (
        "graph-rag-empty",
        "POST",
        "/api/v1/graph-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Oslo?", "mode": "graph"}',
    ),
    ("traces", "GET", "/api/v1/traces", {}, None),
    ("collection-get", "GET", "/api/v1/collections/default", {}, None),
    (
        "document-rag",
        "POST",
        "/api/v1/document-rag",
        {"Content-Type": "application/json"},
        '{"question": "Where is Oslo?"}',
    ),
    ("metrics", "GET", "/metrics", {}, None),
    ("core-export", "GET", "/api/v1/collections/default/core", {}, None),
]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server, stop = start_server(tmp_path_factory.mktemp("auth"), read_tokens=[READ], write_tokens=[WRITE])
    with server.client(WRITE) as client:  # the graph the DELETE case removes
        client.put("/store?graph=http%3A%2F%2Fex%2Fg", content=TRIPLE, headers=NT)
    yield server
    stop()


def _count(server: LiveServer) -> str:
    with server.client(READ) as client:
        return client.get("/store", headers={"Accept": "application/n-quads"}).text


def _send(
    server: LiveServer, token: str | None, method: str, path: str, headers: dict, body: str | None
) -> httpx.Response:
    with server.client(token) as client:
        return client.request(method, path, headers=headers, content=None if body is None else body.encode())


@pytest.mark.parametrize("case", WRITES, ids=[c[0] for c in WRITES])
def test_writes_need_the_write_scope(secured: LiveServer, case: tuple) -> None:
    _, method, path, headers, body = case
    before = _count(secured)
    missing = _send(secured, None, method, path, headers, body)
    assert missing.status_code == 401 and missing.json()["error"] == "unauthorized"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert _send(secured, "wrong-token", method, path, headers, body).status_code == 401
    read_only = _send(secured, READ, method, path, headers, body)
    assert read_only.status_code == 403 and "write" in read_only.json()["detail"]
    assert _count(secured) == before
    allowed = _send(secured, WRITE, method, path, headers, body)
    assert allowed.status_code in (200, 201, 204), allowed.text


@pytest.mark.parametrize("case", READS, ids=[c[0] for c in READS])
def test_reads_need_a_token(secured: LiveServer, case: tuple) -> None:
    _, method, path, headers, body = case
    allowed = 409 if path == "/api/v1/graph-rag" else 200
    assert _send(secured, None, method, path, headers, body).status_code == 401
    assert _send(secured, READ, method, path, headers, body).status_code == allowed
    assert _send(secured, WRITE, method, path, headers, body).status_code == allowed


def test_health_and_the_pages_need_no_token(secured: LiveServer) -> None:
    assert _send(secured, None, "GET", "/healthz", {}, None).json()["status"] == "ok"
    for page in ("/", "/ask", "/openapi.json", "/static/ask.js"):  # they hold no data; their scripts send the token
        assert _send(secured, None, "GET", page, {}, None).status_code == 200, page


def test_a_token_cookie_lets_a_browser_read_but_never_write(secured: LiveServer) -> None:
    cookie = token_cookie(secured.settings)
    assert cookie.startswith("sparqlrag_token_") and cookie != token_cookie(
        Settings(base_iri="http://localhost:7879/")
    )  # one per server
    with httpx.Client(base_url=secured.url, cookies={cookie: READ}) as browser:
        assert browser.get("/api/v1/collections").status_code == 200
        assert browser.get("/id/default/nothing").status_code == 404  # past the token check
    with httpx.Client(base_url=secured.url, cookies={cookie: WRITE}) as forged:  # what a foreign page's form would send
        refused = forged.post("/sparql", data={"update": "CLEAR ALL"})
        assert refused.status_code == 401
        assert forged.post("/sparql", data={"query": "ASK {}"}).status_code == 401  # reads by POST need the header too
    with httpx.Client(base_url=secured.url, cookies={cookie: "wrong"}) as wrong:
        assert wrong.get("/api/v1/collections").status_code == 401


@pytest.mark.parametrize(
    "host,extra,refused",
    [
        ("0.0.0.0", {}, True),
        ("192.168.1.5", {}, True),
        ("0.0.0.0", {"insecure": True}, False),
        ("0.0.0.0", {"write_tokens": ["t"]}, False),
        ("127.0.0.1", {}, False),
        ("::1", {}, False),
        ("localhost", {}, False),
    ],
)
def test_open_bind_is_refused_off_loopback(host: str, extra: dict, refused: bool) -> None:
    settings = Settings(host=host, **extra)
    if refused:
        with pytest.raises(ValueError, match="--insecure"):
            settings.check_bind_address()
    else:
        settings.check_bind_address()


def test_serve_refuses_open_public_bind(tmp_path: Path) -> None:
    result = subprocess.run(
        [SPARQLRAG, "serve", "--host", "0.0.0.0", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "refusing to bind 0.0.0.0 without tokens" in result.stderr
    assert "Traceback" not in result.stderr
