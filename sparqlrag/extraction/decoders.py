"""Documents to text: plain text, Markdown, HTML (stdlib parser) and PDF (pypdf).

The media type comes from the client, else from the file name, else from the content; a
file that does not hold what it claims (binary bytes sent as text, a "PDF" that is not one,
an empty file) is refused with a message that says so.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePath

TEXT, MARKDOWN, HTML, PDF = "text/plain", "text/markdown", "text/html", "application/pdf"
MEDIA_TYPES = (TEXT, MARKDOWN, HTML, PDF)
EXTENSIONS = {
    ".txt": TEXT,
    ".text": TEXT,
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".pdf": PDF,
}
ALIASES = {"text/x-markdown": MARKDOWN, "application/xhtml+xml": HTML, "application/x-pdf": PDF}


class DecodeError(ValueError):
    """The bytes are not a document of the declared kind; the message says what is wrong."""


@dataclass(frozen=True)
class Decoded:
    text: str
    media_type: str
    title: str | None


def media_type_for(declared: str | None, filename: str | None, data: bytes) -> str:
    """The document's media type: declared (if specific), else by extension, else by content."""
    declared = ALIASES.get(
        (declared or "").split(";")[0].strip().lower(), (declared or "").split(";")[0].strip().lower()
    )
    if declared in MEDIA_TYPES:
        return declared
    if declared and declared not in ("application/octet-stream", ""):
        raise DecodeError(
            f"unsupported document type {declared}: send text/plain, text/markdown, text/html or application/pdf"
        )
    if filename and (by_name := EXTENSIONS.get(PurePath(filename).suffix.lower())):
        return by_name
    if data.startswith(b"%PDF-"):
        return PDF
    if re.match(rb"\s*(<!doctype html|<html)", data[:1024], re.IGNORECASE):
        return HTML
    return TEXT


def decode(data: bytes, media_type: str | None = None, filename: str | None = None) -> Decoded:
    if not data.strip():
        raise DecodeError("the document is empty")
    kind = media_type_for(media_type, filename, data)
    if kind == PDF:
        return _pdf(data)
    text = _text(data, kind)
    if kind == HTML:
        parser = _TextOfHtml()
        parser.feed(text)
        parser.close()
        text, title = parser.text(), parser.title
    else:
        title = _markdown_title(text)  # a "# Heading" line names plain text too
    if not text.strip():
        raise DecodeError(f"the {kind} document has no text")
    return Decoded(text, kind, title)


def _text(data: bytes, kind: str) -> str:
    if data.startswith(b"%PDF-"):
        raise DecodeError(f"this is a PDF file, sent as {kind}: send it as application/pdf")
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
    match = re.search(r"^#\s+(.+?)\s*#*\s*$", text, re.MULTILINE)
    return match.group(1) if match else None


def _pdf(data: bytes) -> Decoded:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    if not data.startswith(b"%PDF-"):
        raise DecodeError("the document is labelled PDF but is not a PDF file")
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata else None
    except (PdfReadError, ValueError, KeyError, OSError) as error:
        raise DecodeError(f"the PDF cannot be read: {error}") from None
    text = "\n\n".join(page.strip() for page in pages if page.strip())
    if not text:
        raise DecodeError("the PDF has no extractable text (is it a scan? OCR it first)")
    return Decoded(text, PDF, title or None)


class _TextOfHtml(HTMLParser):
    """Visible text of an HTML page, with block elements as paragraph breaks."""

    BLOCKS = set(
        """
        p div br li ul ol h1 h2 h3 h4 h5 h6 tr table section article header footer blockquote pre hr dt dd
        """.split()
    )
    HIDDEN = {"script", "style", "noscript", "template", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: str | None = None
        self._hidden = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.HIDDEN:
            self._hidden += 1
        if tag == "title":
            self._in_title = True
        if tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.HIDDEN and self._hidden:
            self._hidden -= 1
        if tag == "title":
            self._in_title = False
        if tag in self.BLOCKS:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = " ".join(((self.title or "") + " " + data).split()) or None
        elif not self._hidden:
            self.parts.append(data)

    def text(self) -> str:
        paragraphs = re.split(r"\n\s*\n", "".join(self.parts))
        return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
