"""A decoded document's structure: which stretch of its text lies on which page, under which headings.

Decoders of structured formats (PDF, HTML, DOCX) produce `Block`s in reading order; `assemble`
joins them into the document's text (blocks apart by a blank line, a heading as a paragraph of
its own) and records a `Span` for every stretch of text sharing one page and one heading path.
The chunker cuts at section boundaries (`sections`) and each chunk learns its pages and headings
from the spans it overlaps (`placed`), so provenance can name "p. 3" and "Funding > Staff".
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

HEADING_SEPARATOR = " > "  # between the headings of a path, as sr:headingPath writes it


@dataclass(frozen=True)
class Block:
    """A paragraph (heading 0) or a heading (its level, 1 = outermost), on a page when pages exist.
    `continues`: the paragraph before it goes on here (it ran over a page break)."""

    text: str
    heading: int = 0
    page: int | None = None
    continues: bool = False


@dataclass(frozen=True)
class Span:
    """Characters [start, end) of the text: on `page` (None: the format has no pages), under `headings`."""

    start: int
    end: int
    page: int | None
    headings: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    """Where a chunk lies: its first and last page (None without pages) and its heading path."""

    pages: tuple[int, int] | None = None
    headings: tuple[str, ...] = ()


def opened(path: list[tuple[int, str]], level: int, name: str) -> list[tuple[int, str]]:
    """The open headings (level, name) after a heading of `level`: it closes every open heading
    of its level or deeper, so the path is what a table of contents shows above the text."""
    return [(open_level, open_name) for open_level, open_name in path if open_level < level] + [(level, name)]


def assemble(blocks: list[Block]) -> tuple[str, tuple[Span, ...]]:
    """The text of `blocks` and its spans, each under the headings `opened` above it."""
    parts: list[str] = []
    spans: list[Span] = []
    open_headings: list[tuple[int, str]] = []
    position = 0
    for block in blocks:
        text = " ".join(block.text.split())
        if not text:
            continue
        if block.heading:
            open_headings = opened(open_headings, block.heading, text)
        if parts:
            separator = " " if block.continues else "\n\n"
            parts.append(separator)
            position += len(separator)
        path = tuple(name for _, name in open_headings)
        last = spans[-1] if spans else None
        if last is not None and (last.page, last.headings) == (block.page, path):
            spans[-1] = Span(last.start, position + len(text), block.page, path)
        else:
            spans.append(Span(position, position + len(text), block.page, path))
        parts.append(text)
        position += len(text)
    return "".join(parts), tuple(spans)


def sections(spans: tuple[Span, ...], length: int) -> list[tuple[int, int]]:
    """Ranges of the text under one heading path each (pages do not part them), covering all
    `length` characters; one range when the document has no headings."""
    if not spans:
        return [(0, length)]
    ranges: list[tuple[int, int]] = []
    start = 0
    for before, after in zip(spans, spans[1:]):
        if after.headings != before.headings:
            ranges.append((start, after.start))
            start = after.start
    ranges.append((start, length))
    return ranges


def placed(spans: tuple[Span, ...], start: int, end: int) -> Place:
    """The pages and heading path of characters [start, end): the headings of its first span
    (a chunk never crosses a section), the pages of all the spans it touches."""
    first = max(bisect_right(spans, start, key=lambda span: span.start) - 1, 0)  # (spans are in text order)
    touched = [span for span in spans[first : bisect_left(spans, end, key=lambda span: span.start)] if start < span.end]
    if not touched:
        return Place()
    pages = [span.page for span in touched if span.page is not None]
    return Place((min(pages), max(pages)) if pages else None, touched[0].headings)
