"""What the server shows of a document comes from what the server wrote (issue 51, the lesser
holes): the media type an original is served as, the rows the library lists and links, and the
ids a document may have. A collection writer may write anything in its graphs; none of it may
turn an original into a page that runs, a row into a link to another site, or an id into a URL
browsers rewrite."""

from __future__ import annotations

import pytest

from sparqlrag.store.vocab import SR
from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, snapshot

PAGE = b"<html><head><title>Memo</title></head><body><main><p>Maria Okonkwo leads Oslo.</p></main></body></html>"


def _update(server: LiveServer, text: str) -> None:
    with server.client(WRITE) as client:
        done = client.post("/sparql", content=text, headers={"Content-Type": "application/sparql-update"})
    assert done.status_code == 204, done.text


def test_an_original_is_served_as_what_it_was_read_as(hostile: LiveServer) -> None:
    with hostile.client(WRITE) as client:
        made = client.post("/api/v1/documents", files=[("file", ("memo.html", PAGE, "text/html"))])
        assert made.status_code == 201, made.text
    source = f"<{hostile.settings.base_iri}graph/default/source>"
    document = f"<{hostile.settings.base_iri}doc/default/memo.html>"
    for relabel in ('"application/pdf"', '"text/html\\r\\nX-Planted: 1"'):
        _update(
            hostile,
            "PREFIX dcterms: <http://purl.org/dc/terms/> "
            f"DELETE {{ GRAPH {source} {{ {document} dcterms:format ?f }} }} "
            f"INSERT {{ GRAPH {source} {{ {document} dcterms:format {relabel} }} }} "
            f"WHERE {{ GRAPH {source} {{ {document} dcterms:format ?f }} }}",
        )
        with hostile.client(READ) as reader:
            served = reader.get("/file/doc/default/memo.html")
        assert served.status_code == 200 and served.content == PAGE
        assert served.headers["content-type"].startswith("text/html")
        assert served.headers["content-disposition"].startswith("attachment")
        assert "sandbox" in served.headers["content-security-policy"] and "x-planted" not in served.headers


def test_the_library_lists_only_the_servers_own_documents(hostile: LiveServer) -> None:
    source = f"<{hostile.settings.base_iri}graph/default/source>"
    _update(
        hostile,
        f"PREFIX sr: <{SR}> PREFIX dcterms: <http://purl.org/dc/terms/> "
        f'INSERT DATA {{ GRAPH {source} {{ <https://evil.example/phish> a sr:Document ; dcterms:title "Click me" ; '
        'dcterms:source "x" ; dcterms:format "text/plain" ; sr:sha256 "0" ; sr:status "ready" ; '
        'dcterms:created "2026-01-01T00:00:00Z" } }',
    )
    with hostile.client(READ) as reader:
        listed = reader.get("/api/v1/documents").json()["documents"]
    assert listed and not [doc for doc in listed if "evil.example" in doc["iri"] or "evil.example" in doc["file"]]
    assert all(doc["iri"].startswith(hostile.settings.base_iri + "doc/default/") for doc in listed)


@pytest.mark.parametrize("document_id", [".", ".."])
def test_a_document_id_that_names_a_folder_is_refused(hostile: LiveServer, document_id: str) -> None:
    before = snapshot(hostile)
    with hostile.client(WRITE) as client:
        as_json = client.post("/api/v1/documents", json={"id": document_id, "text": "Dots."})
        raw = client.post(
            "/api/v1/documents", params={"id": document_id}, content=b"Dots.", headers={"Content-Type": "text/plain"}
        )
    for refused in (as_json, raw):
        assert refused.status_code == 400 and repr(document_id) in refused.json()["detail"], refused.text
    assert snapshot(hostile) == before
