"""What a decode may cost (issue 51, hole 2): every document is decoded in a bounded process, so
a file that loops, explodes or nests forever is a 400 `decode_failed` naming the limit it hit,
the server's own threads stay free for everyone else meanwhile, an abandoned upload stops its
decode, and the store is left as it was."""

from __future__ import annotations

import io
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator

import httpx
import pytest

from sparqlrag.extraction.decoders import DOCX, HTML, PDF, decode
from tests.conftest import LiveServer, start_server
from tests.documents_made import pdf_of
from tests.security.conftest import READ, WRITE, Listener, snapshot

ADMIN = "admin"


LOOPING_PDF = pdf_of([b"1 0 R"])  # its root refers to itself: pdfminer's resolve1 never returns


def inflating_pdf(inflated: int) -> bytes:
    """A one-page PDF whose content stream is `inflated` bytes of spaces, compressed to a few KB."""
    stream = zlib.compress(b" " * inflated, 9)
    return pdf_of(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        ]
    )


def empty_paragraphs_docx(paragraphs: int) -> bytes:
    """A DOCX of `paragraphs` empty paragraphs (a million pack into about 10 KB)."""
    ns = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    parts = {
        "[Content_Types].xml": (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": (
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'officeDocument" Target="word/document.xml"/></Relationships>'
        ),
        "word/document.xml": f"<w:document {ns}><w:body>" + "<w:p/>" * paragraphs + "</w:body></w:document>",
    }
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
    return packed.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """Small decode limits, so each is reached in seconds."""
    live, stop = start_server(
        tmp_path_factory.mktemp("decode"),
        write_tokens=[WRITE, ADMIN],
        read_tokens=[READ],
        decode_workers=2,
        decode_timeout=3,
        decode_memory_bytes=192 * 1024 * 1024,
        decode_max_unpacked_bytes=8 * 1024 * 1024,
        decode_max_blocks=5_000,
        max_concurrent_uploads=3,
    )
    with live.client(ADMIN) as admin:
        assert admin.post("/api/v1/documents", json={"id": "kept", "text": "Ada Lovelace wrote notes."}).is_success
    yield live
    stop()


def _upload(server: LiveServer, name: str, data: bytes, kind: str, timeout: float = 120) -> httpx.Response:
    with server.client(WRITE, timeout=timeout) as client:
        return client.post("/api/v1/documents", files=[("file", (name, data, kind))])


def test_a_pdf_that_loops_is_stopped_at_its_deadline_and_everyone_else_is_served(server: LiveServer) -> None:
    """One client's four looping uploads at once: three are admitted (max_concurrent_uploads)
    and stopped at their deadline; the fourth is 429; another client is served meanwhile."""
    before = snapshot(server)
    answers: list[httpx.Response] = []
    uploads = [
        threading.Thread(target=lambda: answers.append(_upload(server, "loop.pdf", LOOPING_PDF, PDF))) for _ in range(4)
    ]
    for upload in uploads:
        upload.start()
    time.sleep(0.5)
    with server.client(ADMIN, timeout=30) as admin:  # answered while the loops run
        for path in ("/healthz", "/api/v1/collections", "/api/v1/documents"):
            assert admin.get(path).status_code == 200, path
        made = admin.post("/api/v1/documents", json={"id": "meanwhile", "text": "Grace Hopper wrote code."})
        assert made.status_code == 201, made.text  # on the decoder the looping client may not take
    for upload in uploads:
        upload.join(120)
    assert sorted(a.status_code for a in answers) == [400, 400, 400, 429], [a.text for a in answers]
    for answer in answers:
        error = answer.json()
        if answer.status_code == 429:
            assert error["error"] == "too_many_uploads" and "max_concurrent_uploads" in error["detail"]
        else:
            assert error["error"] == "decode_failed" and "decode_timeout" in error["detail"], answer.text
    with server.client(ADMIN) as admin:
        assert admin.delete("/api/v1/documents/meanwhile").status_code in (200, 204)
    assert snapshot(server) == before


@pytest.mark.parametrize(
    ("name", "data", "kind", "limit"),
    [
        ("million.docx", empty_paragraphs_docx(1_000_000), DOCX, "decode_max_blocks"),
        ("bomb.pdf", inflating_pdf(64 * 1024 * 1024), PDF, "decode_max_unpacked_bytes"),
    ],
)
def test_a_document_over_a_limit_is_refused_naming_it(
    server: LiveServer, name: str, data: bytes, kind: str, limit: str
) -> None:
    assert len(data) < 200_000
    before = snapshot(server)
    refused = _upload(server, name, data, kind)
    assert refused.status_code == 400 and refused.json()["error"] == "decode_failed", refused.text
    assert limit in refused.json()["detail"]
    assert snapshot(server) == before


def test_a_decode_past_its_memory_is_refused_naming_the_limit(tmp_path_factory: pytest.TempPathFactory) -> None:
    live, stop = start_server(
        tmp_path_factory.mktemp("decode-memory"), decode_memory_bytes=64 * 1024 * 1024, decode_timeout=30
    )
    try:
        refused = _upload(live, "big.pdf", inflating_pdf(200 * 1024 * 1024), PDF)
        assert refused.status_code == 400 and refused.json()["error"] == "decode_failed", refused.text
        assert "decode_memory_bytes" in refused.json()["detail"]
        with live.client() as client:  # the next document is decoded by a new process
            made = client.post("/api/v1/documents", json={"id": "after", "text": "Grace Hopper wrote code."})
            assert made.status_code == 201, made.text
    finally:
        stop()


def test_an_abandoned_upload_frees_its_decoder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """One decoder with a long deadline: the loop a client gave up on is killed when it hangs up,
    so the next upload is decoded long before that deadline."""
    live, stop = start_server(tmp_path_factory.mktemp("decode-abandoned"), decode_workers=1, decode_timeout=120)
    try:
        with pytest.raises(httpx.ReadTimeout):
            _upload(live, "loop.pdf", LOOPING_PDF, PDF, timeout=2)
        with live.client(timeout=60) as client:
            made = client.post("/api/v1/documents", json={"id": "next", "text": "Alan Turing wrote papers."})
        assert made.status_code == 201, made.text
    finally:
        stop()


def test_a_page_that_nests_past_the_parsers_depth_is_refused_not_an_error(server: LiveServer) -> None:
    page = b"<html><body>" + b"<h1><div>" * 1000 + b"deep" + b"</div></h1>" * 1000 + b"</body></html>"
    answer = _upload(server, "deep.html", page, HTML)
    assert answer.status_code in (201, 400), answer.text
    if answer.status_code == 400:
        assert answer.json()["error"] in ("bad_document", "decode_failed")


def test_a_docx_without_core_properties_has_no_made_up_title() -> None:
    """python-docx makes up core properties titled "Word Document" for a file without them;
    such a file is titled by its first heading, else by its file name (pipeline)."""
    bare = empty_paragraphs_docx(0)
    with zipfile.ZipFile(io.BytesIO(bare)) as archive:
        assert "docProps/core.xml" not in archive.namelist()
    packed = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bare)) as source, zipfile.ZipFile(packed, "w") as target:
        for item in source.infolist():
            text = source.read(item.filename)
            if item.filename == "word/document.xml":
                text = text.replace(b"<w:body>", b"<w:body><w:p><w:r><w:t>Body text.</w:t></w:r></w:p>")
            target.writestr(item, text)
    decoded = decode(packed.getvalue(), DOCX)
    assert decoded.text == "Body text." and decoded.title is None


def test_a_decoded_document_contacts_nothing_it_names(server: LiveServer, listener: Listener) -> None:
    """A page naming outside resources (a DTD, an image, a stylesheet, a frame) is decoded by a
    process that has no network: nothing it names is fetched."""
    page = (
        f'<?xml version="1.0"?><!DOCTYPE html SYSTEM "{listener.url("dtd")}">'
        f'<html><head><link rel="stylesheet" href="{listener.url("css")}"/></head><body><main>'
        f'<img src="{listener.url("img")}"/><iframe src="{listener.url("frame")}"></iframe>'
        "<p>Ada Lovelace wrote the first program.</p></main></body></html>"
    ).encode()
    made = _upload(server, "named.html", page, HTML)
    assert made.status_code == 201, made.text
    assert listener.contacts == []
