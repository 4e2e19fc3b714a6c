"""A Word document's (DOCX) body as blocks: paragraphs, tables by row, headings by their style.

python-docx reads the body in order; page headers, footers and footnotes are separate parts of
the file, so they stay out. A heading is a paragraph in a "Heading n" or "Title" style (what
Word's navigation pane shows); the title is the file's own (core properties), else (decoders.py)
its first heading, a "Title" paragraph included. DOCX has no fixed pages: its blocks carry none.

A DOCX is a ZIP archive: its members' unpacked sizes are checked before anything is parsed, so
a small file cannot unpack into gigabytes; python-docx's XML parser resolves no entities.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from typing import Any

from sparqlrag.extraction.structure import Block

MAX_UNPACKED = 256 * 1024 * 1024  # bytes a DOCX may unpack to; text-heavy reports stay far below
_HEADING_STYLE = re.compile(r"(?i)^heading\s*([1-9])$")


class UnreadableDocx(ValueError):
    """The bytes are not a DOCX python-docx can read, or unpack past MAX_UNPACKED; says which."""


def read_docx(data: bytes) -> tuple[list[Block], str | None]:
    """The blocks of the document's body and its title, when it gives one."""
    import docx

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())
    except zipfile.BadZipFile:
        raise UnreadableDocx("the DOCX file is not a ZIP archive") from None
    if unpacked > MAX_UNPACKED:
        raise UnreadableDocx(f"the DOCX file unpacks to {unpacked} bytes, over the {MAX_UNPACKED} allowed")
    try:  # (a parser of bytes from anyone: whatever it fails on, the file cannot be read)
        document = docx.Document(io.BytesIO(data))
        blocks = _blocks(document)
        title = " ".join((document.core_properties.title or "").split()) or None
    except Exception as error:
        damage = "damaged compressed data" if isinstance(error, zlib.error) else type(error).__name__
        raise UnreadableDocx(f"the DOCX file cannot be read ({damage})") from None
    return blocks, title


def _blocks(document: Any) -> list[Block]:
    """The body's blocks: a "Title" paragraph a heading above "Heading 1"."""
    from docx.table import Table

    blocks: list[Block] = []
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            for row in item.rows:
                cells = [" ".join(cell.text.split()) for cell in row.cells]
                blocks.append(Block(" | ".join(dict.fromkeys(cell for cell in cells if cell))))  # merged cells repeat
            continue
        style = (item.style.name if item.style is not None else "") or ""
        level = _HEADING_STYLE.match(style)
        blocks.append(Block(item.text, 1 if style.lower() == "title" else int(level.group(1)) + 1 if level else 0))
    return blocks
