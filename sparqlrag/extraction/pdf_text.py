"""A PDF's text as blocks on pages, with headings told by type size and page furniture left out.

pdfminer.six's layout analysis gives the lines in reading order (columns included) with each
character's size and font, which is what telling a heading from a paragraph needs; pypdf's text
extraction (its layout mode too) gives no sizes. From the lines:
- the body size is the size most characters are set in; a line set larger (by `HEADING_RATIO`)
  is a heading, its level by rank among the heading sizes; a short bold line standing alone in
  the body size is a heading one level below those;
- running headers and footers are lines near the top or bottom edge whose text (digits aside)
  recurs on at least half the pages; a page number there goes too;
- lines join into a paragraph while they keep one size and follow at a normal line distance; a
  paragraph that runs over a page break continues on the next page's block.
Pages are physical pages, counted from 1 (what a viewer's `#page=` opens), not printed labels.

pdfminer inflates a compressed stream whole: a 3 MB file of 1 GiB streams took the server past
4 GB. Its zlib is given one that stops a document's streams at `DecodeLimits.unpacked_bytes` in
all; other filters (LZW, run-length) are bounded by the decoding process's memory limit.
"""

from __future__ import annotations

import io
import logging
import re
import threading
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparqlrag.extraction.decode_limits import DecodeLimits
from sparqlrag.extraction.structure import Block

if TYPE_CHECKING:
    from pdfminer.layout import LTTextLine
    from pdfminer.pdfdocument import PDFDocument

logging.getLogger("pdfminer").setLevel(logging.ERROR)  # it warns of every flaw of a file it still reads
HEADING_RATIO = 1.15  # a line this much larger than the body is a heading
EDGE = 0.1  # share of the page's height at its top and bottom where running headers and footers live
PARAGRAPH_GAP = 1.8  # a baseline-to-baseline distance beyond this many type sizes starts a paragraph
HEADING_WORDS = 12  # a bold line in the body size is a heading only if this short
PAGE_NUMBER = re.compile(r"(?i)^[-–—\s]*(page|p\.|seite|pg\.?)?\s*(\d+|[ivxlc]+)(\s*(of|/|von)\s*\d+)?[-–—\s]*$")
UNHELPFUL_TITLES = re.compile(r"(?i)^(untitled|title|document\d*|microsoft (word|powerpoint) - .*|.*\.(docx?|pdf))$")


@dataclass(frozen=True)
class _Line:
    text: str
    size: float
    bold: bool
    top: float  # distances from the page's bottom, as PDF measures them
    bottom: float
    page: int
    page_height: float

    @property
    def at_edge(self) -> bool:
        return self.bottom > self.page_height * (1 - EDGE) or self.top < self.page_height * EDGE


class _Inflating:
    """zlib as pdfminer uses it, counting what a document's streams inflate to against the
    budget of the read under way in this thread (none: unbounded)."""

    error = zlib.error

    def __init__(self) -> None:
        self.budget = threading.local()

    def decompress(self, data: bytes) -> bytes:
        inflater = self.decompressobj()
        out = inflater.decompress(data)
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")  # (what zlib.decompress says)
        return out

    def decompressobj(self) -> Any:
        return _CountedInflater(self.budget)


class _CountedInflater:
    def __init__(self, budget: threading.local) -> None:
        self._inflater, self._budget = zlib.decompressobj(), budget

    @property
    def eof(self) -> bool:
        return self._inflater.eof

    def decompress(self, data: bytes) -> bytes:
        left: int | None = getattr(self._budget, "left", None)
        limits: DecodeLimits | None = getattr(self._budget, "limits", None)
        if left is None or limits is None:
            return self._inflater.decompress(data)
        out = self._inflater.decompress(data, left + 1)
        if len(out) > left:
            raise limits.too_large("the PDF's compressed content")
        self._budget.left = left - len(out)
        return out


_INFLATING = _Inflating()


def read_pdf(data: bytes, limits: DecodeLimits) -> tuple[list[Block], str | None, int]:
    """The blocks, the title the file's metadata gives (unless it is a placeholder), and the
    number of pages. Raises pdfminer's errors for what is not a readable PDF, and
    DecodeLimitExceeded."""
    from pdfminer import pdftypes

    pdftypes.zlib = _INFLATING  # type: ignore[assignment]
    _INFLATING.budget.left, _INFLATING.budget.limits = limits.unpacked_bytes, limits
    try:
        return _read(data, limits)
    finally:
        _INFLATING.budget.left = _INFLATING.budget.limits = None


def _read(data: bytes, limits: DecodeLimits) -> tuple[list[Block], str | None, int]:
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdfparser import PDFParser
    from pdfminer.utils import decode_text

    document = PDFDocument(PDFParser(io.BytesIO(data)))
    title = None
    for info in document.info:
        raw = info.get("Title")
        if isinstance(raw, bytes):
            title = " ".join(decode_text(raw).split()) or None
        elif isinstance(raw, str):
            title = " ".join(raw.split()) or None
    if title and UNHELPFUL_TITLES.match(title):
        title = None
    lines, pages = _lines(document, limits)
    return _blocks(_without_furniture(lines, pages)), title, pages


def _lines(document: PDFDocument, limits: DecodeLimits) -> tuple[list[_Line], int]:
    """Every page's text lines, from the document parsed once (what pdfminer's extract_pages
    does, given the document the title was read from rather than parsing the file again)."""
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import LAParams, LTChar
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage

    resources = PDFResourceManager()
    device = PDFPageAggregator(resources, laparams=LAParams())
    interpreter = PDFPageInterpreter(resources, device)
    lines: list[_Line] = []
    pages = 0
    for number, source in enumerate(PDFPage.create_pages(document), start=1):
        interpreter.process_page(source)
        page = device.get_result()
        pages = number
        for element in _text_lines(page):
            chars = [c for c in element if isinstance(c, LTChar) and c.get_text().strip()]
            text = " ".join(element.get_text().split())
            if not chars or not text:
                continue
            size = Counter(round(c.size * 2) / 2 for c in chars).most_common(1)[0][0]
            bold = sum(_is_bold(c.fontname) for c in chars) * 2 > len(chars)
            lines.append(_Line(text, size, bold, element.y1, element.y0, number, page.height))
        if len(lines) > limits.blocks:
            raise limits.too_many_blocks()
    return lines, pages


def _text_lines(container: Iterable[Any]) -> Iterator[LTTextLine]:
    """The text lines of a page in the layout analysis's reading order, boxes and figures opened."""
    from pdfminer.layout import LTContainer, LTTextLine

    for element in container:
        if isinstance(element, LTTextLine):
            yield element
        elif isinstance(element, LTContainer):
            yield from _text_lines(element)


def _is_bold(fontname: object) -> bool:
    name = str(fontname).lower()
    return any(weight in name for weight in ("bold", "black", "heavy", "semibold"))


def _without_furniture(lines: list[_Line], pages: int) -> list[_Line]:
    """Lines less running headers, footers and page numbers."""

    def shape(line: _Line) -> str:
        return re.sub(r"\d+", "#", line.text.lower())

    at_edges = {(line.page, shape(line)) for line in lines if line.at_edge}
    recurring = Counter(shaped for _, shaped in at_edges)
    enough = max(2, (pages + 1) // 2)
    return [
        line
        for line in lines
        if not (line.at_edge and (recurring[shape(line)] >= enough or PAGE_NUMBER.match(line.text)))
    ]


def _blocks(lines: list[_Line]) -> list[Block]:
    if not lines:
        return []
    sizes: Counter[float] = Counter()
    for line in lines:
        sizes[line.size] += len(line.text)
    body = sizes.most_common(1)[0][0]
    larger = sorted({line.size for line in lines if line.size >= body * HEADING_RATIO}, reverse=True)
    levels = {size: rank for rank, size in enumerate(larger, start=1)}

    def level(line: _Line, alone: bool) -> int:
        if line.size in levels:
            return levels[line.size]
        short = len(line.text.split()) <= HEADING_WORDS and not line.text.endswith((".", ",", ";", ":"))
        return len(larger) + 1 if line.bold and line.size == body and alone and short else 0

    blocks: list[Block] = []
    current: list[_Line] = []

    def close() -> None:
        if not current:
            return
        first, text = current[0], " ".join(line.text for line in current)
        alone = len(current) == 1
        heading = level(first, alone)
        continues = bool(
            blocks
            and not heading
            and not blocks[-1].heading
            and blocks[-1].page != first.page
            and not blocks[-1].text.endswith((".", "!", "?", ":"))
            and first.text[:1].islower()
        )
        blocks.append(Block(text, heading, first.page, continues))
        current.clear()

    for line in lines:
        if current and not _same_paragraph(current[-1], line):
            close()
        current.append(line)
    close()
    return blocks


def _same_paragraph(previous: _Line, line: _Line) -> bool:
    """The next line of the same paragraph: the same page, size and weight, just below."""
    distance = previous.bottom - line.bottom
    return (
        line.page == previous.page
        and (line.size, line.bold) == (previous.size, previous.bold)
        and 0 < distance <= PARAGRAPH_GAP * line.size
    )
