"""A SELECT answer as a person reads it on a terminal: one column per variable, IRIs compacted
with the project's prefixes, long values cut. Pipes and files get the standard formats."""

from __future__ import annotations

import json
from typing import Any

from texttable import Texttable

from sparqlrag.store import vocab

TABLE = "table"  # the `query --format` that asks for the table even when stdout is not a terminal
CELL_CHARS = 60  # a longer value is cut, with "…": a table wider than the terminal is unreadable


def solutions_table(body: bytes) -> str:
    """The table of a SPARQL JSON results document (SELECT), with its row count under it."""
    answer = json.loads(body)
    variables: list[str] = answer["head"]["vars"]
    bindings: list[dict[str, Any]] = answer["results"]["bindings"]
    count = f"{len(bindings)} row{'' if len(bindings) == 1 else 's'}"
    if not variables:
        return count
    table = Texttable(max_width=0)
    table.set_deco(Texttable.HEADER)
    table.set_cols_dtype(["t"] * len(variables))  # text as it is: no number formatting
    table.header([f"?{name}" for name in variables])
    for row in bindings:
        table.add_row([_cut(_term(row[name])) if name in row else "" for name in variables])
    return f"{table.draw()}\n{count}"


def _term(term: dict[str, Any]) -> str:
    kind, value = term["type"], term["value"]
    if kind == "uri":
        return _compact(value)
    if kind == "bnode":
        return f"_:{value}"
    if kind == "triple":
        parts = term["value"]
        return f"<< {_term(parts['subject'])} {_term(parts['predicate'])} {_term(parts['object'])} >>"
    if "xml:lang" in term:
        return f"{value}@{term['xml:lang']}"
    return str(value)


def _compact(iri: str) -> str:
    for prefix, namespace in vocab.PREFIXES.items():
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return f"<{iri}>"


def _cut(text: str) -> str:
    text = " ".join(text.split())  # a multi-line literal stays on its row
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
