"""A SELECT answer as a person reads it on a terminal: one column per variable, IRIs compacted
with the project's prefixes, long values cut. Pipes and files get the standard formats."""

from __future__ import annotations

from pyoxigraph import BlankNode, Literal, NamedNode, QueryBoolean, QueryResultsFormat, Triple, parse_query_results
from texttable import Texttable

from sparqlrag.store import vocab

TABLE = "table"  # the `query --format` that asks for the table even when stdout is not a terminal
CELL_CHARS = 60  # a longer value is cut, with "…": a table wider than the terminal is unreadable


def readable(body: bytes) -> str:
    """A SPARQL JSON results document as a person reads it: an ASK's yes or no, a SELECT's table
    with its row count under it."""
    result = parse_query_results(body, QueryResultsFormat.JSON)
    if isinstance(result, QueryBoolean):
        return "yes" if result else "no"
    variables = [variable.value for variable in result.variables]
    rows = [[_cut(_text(row[name])) if row[name] is not None else "" for name in variables] for row in result]
    count = f"{len(rows)} row{'' if len(rows) == 1 else 's'}"
    if not variables:
        return count
    table = Texttable(max_width=0)
    table.set_deco(Texttable.HEADER)
    table.set_cols_dtype(["t"] * len(variables))  # text as it is: no number formatting
    table.header([f"?{name}" for name in variables])
    table.add_rows(rows, header=False)
    return f"{table.draw()}\n{count}"


def _text(term: NamedNode | BlankNode | Literal | Triple) -> str:
    if isinstance(term, NamedNode):
        return _compact(term.value)
    if isinstance(term, BlankNode):
        return f"_:{term.value}"
    if isinstance(term, Triple):
        return f"<< {_text(term.subject)} {_text(term.predicate)} {_text(term.object)} >>"
    return f"{term.value}@{term.language}" if term.language else term.value


def _compact(iri: str) -> str:
    for prefix, namespace in vocab.PREFIXES.items():
        if iri.startswith(namespace) and len(iri) > len(namespace):
            return f"{prefix}:{iri[len(namespace) :]}"
    return f"<{iri}>"


def _cut(text: str) -> str:
    text = " ".join(text.split())  # a multi-line literal stays on its row
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
