"""Documents to text with structure: plain text, Markdown, HTML, PDF and DOCX.

The media type comes from the client, else from the file name, else from the content; a
file that does not hold what it claims (binary bytes sent as text, a "PDF" that is not one,
an empty file) is refused with a message that says so. Structured formats keep their headings
and pages as spans of the text (structure.py); each format's reader is its own module
(pdf_text, html_text, docx_text).

A decode may not take more than its DecodeLimits: bytes unpacked or decompressed and blocks
(paragraphs, lines, table rows) are counted here as they are read; time and memory are bounded
by the process that decodes (decode_pool.py). Going over a limit is DecodeLimitExceeded, whose
message names the setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

from sparqlrag.extraction.decode_limits import DecodeError, DecodeLimitExceeded, DecodeLimits
from sparqlrag.extraction.docx_text import UnreadableDocx, read_docx
from sparqlrag.extraction.html_text import read_html
from sparqlrag.extraction.pdf_text import read_pdf
from sparqlrag.extraction.structure import Block, Span, assemble, opened

__all__ = ["DecodeError", "DecodeLimitExceeded", "DecodeLimits", "Decoded", "decode", "media_type_for"]

TEXT, MARKDOWN, HTML, PDF = "text/plain", "text/markdown", "text/html", "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MEDIA_TYPES = (TEXT, MARKDOWN, HTML, PDF, DOCX)
EXTENSIONS = {
    ".txt": TEXT,
    ".text": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
    ".docx": DOCX,
}
ALIASES = {"text/x-markdown": MARKDOWN, "application/xhtml+xml": HTML, "application/x-pdf": PDF}
DEFAULT_LIMITS = DecodeLimits()
_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Decoded:
    """The text, its kind and title; where its stretches lie (pages, headings), and its page count."""

    text: str
    media_type: str
    title: str | None
    spans: tuple[Span, ...] = ()
    pages: int | None = None


def kinds() -> str:
    """The kinds of document read, one extension each: ".txt, .md, .html, .pdf, .docx"."""
    first: dict[str, str] = {}
    for suffix, kind in EXTENSIONS.items():
        first.setdefault(kind, suffix)
    return ", ".join(first.values())


def media_type_for(declared: str | None, filename: str | None, data: bytes) -> str:
    """The document's media type: declared (if specific), else by extension, else by content."""
    declared = ALIASES.get(
        (declared or "").split(";")[0].strip().lower(), (declared or "").split(";")[0].strip().lower()
    )
    if declared in MEDIA_TYPES:
        return declared
    if declared and declared not in ("application/octet-stream", ""):
        raise DecodeError(
            f"unsupported document type {declared}: send text/plain, text/markdown, text/html, application/pdf or DOCX"
        )
    if filename and (by_name := EXTENSIONS.get(PurePath(filename).suffix.lower())):
        return by_name
    if data.startswith(b"%PDF-"):
        return PDF
    if data.startswith(b"PK\x03\x04") and b"word/" in data[:4096]:
        return DOCX
    if re.match(rb"\s*(<!doctype html|<html)", data[:1024], re.IGNORECASE):
        return HTML
    return TEXT


def decode(
    data: bytes, media_type: str | None = None, filename: str | None = None, limits: DecodeLimits = DEFAULT_LIMITS
) -> Decoded:
    if not data.strip():
        raise DecodeError("the document is empty")
    kind = media_type_for(media_type, filename, data)
    if kind == PDF:
        return _pdf(data, limits)
    if kind == DOCX:
        return _docx(data, limits)
    text = _text(data, kind)
    if kind == HTML:
        try:  # (a parser of text from anyone: whatever it fails on, the page cannot be read)
            blocks, title = read_html(text)
        except MemoryError:
            raise
        except Exception as error:
            raise DecodeError(f"the HTML page cannot be read ({type(error).__name__})") from None
        return _structured(blocks, HTML, title, limits=limits)
    if not text.strip():
        raise DecodeError(f"the {kind} document has no text")
    spans = _markdown_spans(text) if kind == MARKDOWN else ()
    title = _markdown_title(text)  # a "# Heading" line names plain text too
    return Decoded(text, kind, title, spans)


def _structured(
    blocks: list[Block], kind: str, title: str | None, pages: int | None = None, *, limits: DecodeLimits
) -> Decoded:
    """The document of `blocks`; titled by the file's own title, else by its first heading."""
    if len(blocks) > limits.blocks:
        raise limits.too_many_blocks()
    text, spans = assemble(blocks)
    if not text:
        raise DecodeError(f"the {kind} document has no text")
    title = title or next((" ".join(b.text.split()) for b in blocks if b.heading and b.text.strip()), None)
    return Decoded(text, kind, title, spans, pages)


def _text(data: bytes, kind: str) -> str:
    if data.startswith(b"%PDF-"):
        raise DecodeError(f"this is a PDF file, sent as {kind}: send it as application/pdf")
    if data.startswith(b"PK\x03\x04"):
        raise DecodeError(f"this is a ZIP archive (a DOCX?), sent as {kind}: send a DOCX file as {DOCX}")
    for bom, codec in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(codec)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DecodeError(f"the {kind} document is not UTF-8 text (invalid byte at position {error.start})") from None
    controls = sum(1 for ch in text[:4096] if ord(ch) < 32 and ch not in "\t\n\r\f")
    if "\x00" in text or controls > len(text[:4096]) * 0.05:
        raise DecodeError(f"the {kind} document looks like binary data, not text")
    return text


def _markdown_title(text: str) -> str | None:
    match = _ATX_HEADING.search(text)
    return match.group(2) if match else None


def _markdown_spans(text: str) -> tuple[Span, ...]:
    """Spans of a Markdown text under its ATX headings (`## Name`), fenced code aside."""
    spans: list[Span] = []
    path: list[tuple[int, str]] = []
    start, fence, position = 0, "", 0
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if fence and stripped.startswith(fence):
            fence = ""
        elif not fence and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif not fence and (heading := _ATX_HEADING.match(line)):
            if position > start:
                spans.append(Span(start, position, None, tuple(name for _, name in path)))
            path = opened(path, len(heading.group(1)), heading.group(2))
            start = position
        position += len(line)
    spans.append(Span(start, len(text), None, tuple(name for _, name in path)))
    return tuple(spans)


def _pdf(data: bytes, limits: DecodeLimits) -> Decoded:
    if not data.startswith(b"%PDF-"):
        raise DecodeError("the document is labelled PDF but is not a PDF file")
    try:  # (a parser of bytes from anyone: whatever it fails on, the file cannot be read)
        blocks, title, pages = read_pdf(data, limits)
    except (DecodeLimitExceeded, MemoryError):  # (the decoding process says which limit)
        raise
    except Exception as error:
        raise DecodeError(f"the PDF cannot be read ({type(error).__name__})") from None
    if not any(block.text.strip() for block in blocks):
        raise DecodeError("the PDF has no extractable text (is it a scan? OCR it first)")
    return _structured(blocks, PDF, title, pages, limits=limits)


def _docx(data: bytes, limits: DecodeLimits) -> Decoded:
    try:
        blocks, title = read_docx(data, limits)
    except UnreadableDocx as error:
        raise DecodeError(str(error)) from None
    return _structured(blocks, DOCX, title, limits=limits)
