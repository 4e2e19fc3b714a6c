"""A bound on what RDF/XML's DTD entities may expand to, checked before Oxigraph parses the file.

Oxigraph's RDF/XML parser honours `<!ENTITY name "value">` declarations (Protégé writes them
for namespaces) and expands each value as it is declared, with the entities declared before
it: ten nested declarations turn a few hundred bytes into gigabytes before a triple is read
(a 613-byte file once stored a 3,000,000-character literal). The bound needs no second
reading of names, only facts of the parser's: a declaration is the text `<!ENTITY` (the parser
reads UTF-8 only, so the bytes are the text) up to the next `<`, its value lies inside that,
and a reference is `&...;`. Each declaration is charged its length plus, per reference in it,
the longest value declared before it; each reference in the file is charged the longest value
of all. A file whose bound exceeds the limits is refused; files without `<!ENTITY` (almost
all) cost one substring search.
"""

from __future__ import annotations

import mmap
import re
from pathlib import Path
from typing import BinaryIO

from sparqlrag.store.base import DataSyntaxError

MAX_ENTITY_BYTES = 1 << 20  # one entity's expanded value
MAX_EXPANSION_BYTES = 64 << 20  # all references in the file, expanded, beyond 4x the file's size
_DECLARATION = re.compile(rb"<!ENTITY[^<]*")
_REFERENCE = re.compile(rb"&[^;]*;")


def check_entity_expansion(source: bytes | Path | BinaryIO) -> None:
    """Raise DataSyntaxError when the file's entities could expand past the limits."""
    if isinstance(source, Path):
        with source.open("rb") as file:
            if file.seek(0, 2) == 0:
                return
            with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                _check(data)
    elif isinstance(source, bytes):
        _check(source)
    else:  # a stream from its start: scanned in blocks; read whole only when it declares entities
        tail, declares = b"", False
        while block := source.read(1 << 20):
            if b"<!ENTITY" in tail + block:
                declares = True
                break
            tail = block[-7:]
        source.seek(0)
        if declares:
            _check(source.read())
            source.seek(0)


def _check(data: bytes | mmap.mmap) -> None:
    if data.find(b"<!ENTITY") < 0:
        return
    longest = 1  # what a reference may expand to: the predefined entities are one character
    for declaration in _DECLARATION.finditer(data):
        text = declaration.group()
        size = len(text) + len(_REFERENCE.findall(text)) * longest
        if size > MAX_ENTITY_BYTES:
            raise DataSyntaxError(
                f"an RDF/XML entity may expand to over {MAX_ENTITY_BYTES} bytes; such files are refused "
                "(entity expansion attack)"
            )
        longest = max(longest, size)
    expansion = sum(1 for _ in _REFERENCE.finditer(data)) * longest
    if expansion > MAX_EXPANSION_BYTES + 4 * len(data):
        raise DataSyntaxError(
            f"the RDF/XML file's entity references may expand to {expansion} bytes, far beyond its own size; "
            "such files are refused (entity expansion attack)"
        )
