"""Decoding documents (text, Markdown, HTML, PDF, and what is not any of them) and chunking."""

from __future__ import annotations

import pytest

from sparqlrag.extraction.decoders import HTML, MARKDOWN, PDF, TEXT, DecodeError, decode
from tests.documents_made import pdf_of


def minimal_pdf(text: str, title: str = "A Test PDF") -> bytes:
    """A one-page PDF with `text` in Helvetica, with a correct cross-reference table."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> "
        b">>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    return pdf_of(objects, b"/Info 6 0 R ")


def test_plain_markdown_html_and_pdf() -> None:
    assert decode(b"Plain words.\n", "text/plain").text == "Plain words.\n"
    markdown = decode(b"Intro\n\n# The Title\n\nBody text.", None, "notes.md")
    assert (markdown.media_type, markdown.title) == (MARKDOWN, "The Title")
    html = decode(
        b"<!DOCTYPE html><html><head><title>Page &amp; Co</title><style>p{}</style></head>"
        b"<body><h1>Heading</h1><p>First <b>para</b>.</p><script>var x;</script><p>Second.</p></body></html>"
    )
    assert (html.media_type, html.title, html.text) == (HTML, "Page & Co", "Heading\n\nFirst para.\n\nSecond.")
    pdf = decode(minimal_pdf("Hello PDF world"), "application/pdf")
    assert (pdf.media_type, pdf.title) == (PDF, "A Test PDF") and "Hello PDF world" in pdf.text
    assert decode(minimal_pdf("Sniffed"), None).media_type == PDF
    assert decode("\ufeffWith a BOM".encode("utf-8"), TEXT).text == "With a BOM"


@pytest.mark.parametrize(
    "data,media_type,message",
    [
        (b"", "text/plain", "empty"),
        (b"  \n\t ", None, "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 20, "text/plain", "not UTF-8"),
        (bytes(range(1, 32)) * 40, "text/plain", "binary data"),
        (b"just some text", "application/pdf", "labelled PDF but is not a PDF"),
        (b"%PDF-1.4\nthis is not really a pdf", "application/pdf", "cannot be read"),
        (minimal_pdf("x"), "text/plain", "send it as application/pdf"),
        (b"<html><body><script>only()</script></body></html>", "text/html", "has no text"),
        (b"data", "application/zip", "unsupported document type application/zip"),
    ],
)
def test_what_is_not_a_document_is_refused(data: bytes, media_type: str | None, message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        decode(data, media_type)
