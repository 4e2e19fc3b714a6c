"""A Word document's (DOCX) body as blocks: paragraphs, tables by row, headings by their style.

python-docx reads the body in order; page headers, footers and footnotes are separate parts of
the file, so they stay out. A heading is a paragraph in a "Heading n" or "Title" style (what
Word's navigation pane shows); the title is the file's own (core properties), else (decoders.py)
its first heading, a "Title" paragraph included. DOCX has no fixed pages: its blocks carry none.

A DOCX is a ZIP archive: its members' unpacked sizes are checked before anything is parsed, so
a small file cannot unpack into gigabytes, and the body's paragraphs and tables are counted
before python-docx wraps each (a 10 KB file of a million empty paragraphs took minutes);
python-docx's XML parser resolves no entities.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from typing import Any

from sparqlrag.extraction.decode_limits import DecodeLimitExceeded, DecodeLimits
from sparqlrag.extraction.structure import Block

_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")


class UnreadableDocx(ValueError):
    """The bytes are not a DOCX python-docx can read; says why."""


def read_docx(data: bytes, limits: DecodeLimits) -> tuple[list[Block], str | None]:
    """The blocks of the document's body and its title, when it gives one."""
    import docx

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except zipfile.BadZipFile:
        raise UnreadableDocx("the DOCX file is not a ZIP archive") from None
    if unpacked > limits.unpacked_bytes:
        raise limits.too_large("the DOCX file")
    try:  # (a parser of bytes from anyone: whatever it fails on, the file cannot be read)
        document = docx.Document(io.BytesIO(data))
        if len(document.element.body) > limits.blocks:
            raise limits.too_many_blocks()
        blocks = _blocks(document, limits)
        title = _title(document)
    except (DecodeLimitExceeded, MemoryError):
        raise
    except Exception as error:
        damage = "damaged compressed data" if isinstance(error, zlib.error) else type(error).__name__
        raise UnreadableDocx(f"the DOCX file cannot be read ({damage})") from None
    return blocks, title


def _title(document: Any) -> str | None:
    """The title of the file's core properties; none for a file without them (python-docx would
    make up default ones, titled "Word Document")."""
    from docx.opc.constants import RELATIONSHIP_TYPE

    try:
        document.part.package.part_related_by(RELATIONSHIP_TYPE.CORE_PROPERTIES)
    except KeyError:
        return None
    return " ".join((document.core_properties.title or "").split()) or None


def _blocks(document: Any, limits: DecodeLimits) -> list[Block]:
    """The body's blocks: a "Title" paragraph a heading above "Heading 1"."""
    from docx.table import Table

    blocks: list[Block] = []
    for item in document.iter_inner_content():
        if len(blocks) > limits.blocks:
            raise limits.too_many_blocks()
        if isinstance(item, Table):
            for row in item.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                blocks.append(Block(" | ".join(dict.fromkeys(cell for cell in cells if cell))))  # merged cells repeat
            continue
        style = (item.style.name if item.style is not None else "") or ""
        level = _HEADING_STYLE.match(style)
        blocks.append(Block(item.text, 1 if style.lower() == "title" else int(level.group(1)) + 1 if level else 0))
    return blocks
