"""The recursive splitter: paragraphs, then lines, then words, then characters.

Works on character spans of the original text, so every chunk knows its exact offset
(written to the store as sr:offset). Adjacent pieces are packed into chunks of at most
`size` characters; a new chunk repeats up to `overlap` characters of the previous one,
taken from whole pieces. Given `sections` (ranges of the text under one heading each), no chunk
crosses from one into the next: each section is split on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

SEPARATORS = ("\n\n", "\n", " ", "")


@dataclass(frozen=True)
class Piece:
    text: str
    offset: int


def _spans(text: str, start: int, end: int, separators: tuple[str, ...], size: int) -> list[tuple[int, int]]:
    """Contiguous spans covering [start, end), each at most `size` long, cut at the coarsest separator."""
    if end - start <= size:
        return [(start, end)]
    separator, *finer = separators
    if separator == "":
        return [(s, min(s + size, end)) for s in range(start, end, size)]
    if text.find(separator, start, end) == -1:
        return _spans(text, start, end, tuple(finer), size)
    spans, position = [], start
    while position < end:
        cut = text.find(separator, position, end)
        stop = end if cut == -1 else cut + len(separator)
        spans.extend(_spans(text, position, stop, tuple(finer), size))
        position = stop
    return spans


def split(
    text: str,
    size: int = 2000,
    overlap: int = 100,
    separators: tuple[str, ...] = SEPARATORS,
    sections: list[tuple[int, int]] | None = None,
) -> list[Piece]:
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"chunk size must be positive and overlap in [0, size); got size={size}, overlap={overlap}")
    chunks: list[Piece] = []
    for start, end in sections or [(0, len(text))]:
        chunks += _split_range(text, start, end, size, overlap, separators)
    return chunks


def _split_range(text: str, start: int, end: int, size: int, overlap: int, separators: tuple[str, ...]) -> list[Piece]:
    pieces = _spans(text, start, end, separators, size)
    chunks: list[Piece] = []
    current: list[tuple[int, int]] = []

    def emit() -> None:
        first, last = current[0][0], current[-1][1]
        body = text[first:last]
        stripped = body.strip()
        if stripped:
            chunks.append(Piece(stripped, first + len(body) - len(body.lstrip())))

    for piece in pieces:
        if current and piece[1] - current[0][0] > size:
            emit()
            kept: list[tuple[int, int]] = []
            total = 0
            for span in reversed(current):
                total += span[1] - span[0]
                if total > overlap:
                    break
                kept.insert(0, span)
            current = [span for span in kept if piece[1] - span[0] <= size]
        current.append(piece)
    if current:
        emit()
    return chunks
