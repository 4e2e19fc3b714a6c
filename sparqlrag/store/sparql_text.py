"""Lexer-level reading of SPARQL text: the protocol's update dataset, and SPARQL term syntax.

pyoxigraph's `Store.update` takes no dataset, so the protocol dataset is written into the
update as USING / USING NAMED clauses before each top-level WHERE. Only a lexer is needed:
at brace depth 0 an update consists of operation keywords, IRIs, prefixed names and `;`;
every WHERE met there belongs to a DELETE/INSERT operation. Graph IRIs are validated and
written as <...> so client text is never pasted unescaped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pyoxigraph import DefaultGraph, NamedNode, Quad, RdfFormat, Triple, parse

from sparqlrag.store.base import QuerySyntaxError, UpdateDatasetConflict

_TOKEN = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<comment>\#[^\n]*)
    | (?P<string>\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|'''(?:[^'\\]|\\.|'(?!''))*'''
                |"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
    | (?P<iri><(?:[^<>"{}|^`\\\x00-\x20]|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8})*>)
    | (?P<var>[?$][\w\u00b7\u00c0-\uffff]+)
    | (?P<pname>(?:[A-Za-z_\u00c0-\uffff][\w.\-\u00c0-\uffff]*)?:(?:[\w.\-:%\u00c0-\uffff]|\\[_~.\-!$&'()*+,;=/?\#@%])*)
    | (?P<word>[A-Za-z_]\w*)
    | (?P<number>\d+\.\d*[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
    | (?P<open>\{)
    | (?P<close>\})
    | (?P<semicolon>;)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

T = TypeVar("T")
_IRI_FORBIDDEN = re.compile(r'[<>"{}|^`\\\x00-\x20]')


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int
    depth: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def tokens(text: str) -> list[Token]:
    """The text's tokens, without white space and comments, each with its brace depth."""
    return list(_scan(text))


def _scan(text: str) -> Iterator[Token]:
    depth = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "other"
        if kind in ("ws", "comment"):
            continue
        if kind == "close":
            depth -= 1
        yield Token(kind, match.group(), match.start(), depth)
        if kind == "open":
            depth += 1


def iri_ref(iri: str) -> str:
    """`<iri>` for an absolute IRI from a client, refusing characters that could break out."""
    if not iri or _IRI_FORBIDDEN.search(iri) or ":" not in iri:
        raise QuerySyntaxError(f"not a valid absolute IRI: {iri!r}")
    return f"<{iri}>"


def _keyword(token: Token) -> str:
    return token.text.upper() if token.kind == "word" and token.depth == 0 else ""


QUERY_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
UPDATE_OPERATIONS = ("INSERT", "DELETE", "WITH", "LOAD", "CLEAR", "CREATE", "DROP", "COPY", "MOVE", "ADD")
_PROLOGUE = ("PREFIX", "BASE", "VERSION")


def leading_keyword(text: str) -> str:
    """The first keyword of a query or update past its prologue (PREFIX, BASE and VERSION
    declarations), upper-cased; "" when there is none. Reads only as far as that keyword."""
    for token in _scan(text):
        if (word := _keyword(token)) and word not in _PROLOGUE:
            return word
    return ""


def query_form(query: str) -> str | None:
    """SELECT, ASK, CONSTRUCT or DESCRIBE: the query's first keyword past its prologue (None if
    it is none of them), so a store can be asked for results or for triples, not both. Every
    query sent to a remote store passes here."""
    word = leading_keyword(query)
    return word if word in QUERY_FORMS else None


def misread_query(query: str) -> str | None:
    """What is wrong with text sent as a query that does not start as one, in words a person
    can act on (a parser would say "expected CONSTRUCT"): an update, or a word that is no query
    form. None when it starts as a query does."""
    word = leading_keyword(query)
    if not word or word in QUERY_FORMS:
        return None
    if word in UPDATE_OPERATIONS:
        return f"this is an update ({word}), not a query: send it as one (`update=`, or `sparqlrag update`)"
    forms = ", ".join(QUERY_FORMS[:-1]) + f" or {QUERY_FORMS[-1]}"
    return f"a query starts with {forms} after its PREFIX and BASE declarations, not {word[:40]!r}"


def matching_close(found: list[Token], open_index: int) -> int:
    """The index of the `}` that closes the `{` at `open_index`."""
    depth = found[open_index].depth
    for index in range(open_index + 1, len(found)):
        if found[index].kind == "close" and found[index].depth == depth:
            return index
    raise QuerySyntaxError("the braces do not balance: a { has no matching }")


def apply_update_dataset(update: str, using_graphs: Sequence[str], using_named_graphs: Sequence[str]) -> str:
    """The update with the protocol dataset written into every DELETE/INSERT ... WHERE operation.

    Raises UpdateDatasetConflict when an operation already has USING or WITH (SPARQL 1.1
    Protocol 2.2.3: such a request must be rejected).
    """
    if not using_graphs and not using_named_graphs:
        return update
    clause = " ".join(
        [f"USING {iri_ref(g)}" for g in using_graphs] + [f"USING NAMED {iri_ref(g)}" for g in using_named_graphs]
    )
    found = tokens(update)
    for token in found:
        if _keyword(token) in ("USING", "WITH"):
            raise UpdateDatasetConflict(
                f"the update has its own {_keyword(token)} clause and the request also sets "
                "using-graph-uri/using-named-graph-uri; use one or the other"
            )
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) on the original text
    for index, token in enumerate(found):
        if _keyword(token) != "WHERE":
            continue
        previous = _keyword(found[index - 1]) if index else ""
        if previous == "DELETE" and index + 1 < len(found) and found[index + 1].kind == "open":
            # DELETE WHERE { P } takes no USING; the equivalent DELETE { P } USING ... WHERE { P } does.
            close = matching_close(found, index + 1)
            pattern = update[found[index + 1].start : found[close].start + 1]
            edits.append((token.start, token.start + len("WHERE"), f"{pattern} {clause} WHERE"))
        else:
            edits.append((token.start, token.start, f"{clause} "))
    for start, end, replacement in reversed(edits):
        update = update[:start] + replacement + update[end:]
    return update


def sparql_term(term: object) -> str:
    """A pyoxigraph term in SPARQL syntax: pyoxigraph escapes IRIs and literals; triple terms
    need the <<( )>> wrapper that str() leaves out."""
    if isinstance(term, Triple):
        return f"<<( {sparql_term(term.subject)} {sparql_term(term.predicate)} {sparql_term(term.object)} )>>"
    return str(term)


def insert_data(quads: Iterable[Quad]) -> str:
    """INSERT DATA for quads, grouped by graph (the default graph's outside any GRAPH block), or
    "" when there are none."""
    return _data("INSERT", quads)


def delete_data(quads: Iterable[Quad]) -> str:
    return _data("DELETE", quads)


def move_data(quads: list[Quad], graph: NamedNode) -> str:
    """The update that moves `quads` (each from its own graph) into `graph`."""
    moved = [Quad(q.subject, q.predicate, q.object, graph) for q in quads]
    return delete_data(quads) + " ;\n" + insert_data(moved)


def _data(keyword: str, quads: Iterable[Quad]) -> str:
    by_graph: dict[str, list[str]] = {}
    for quad in quads:
        line = f"{sparql_term(quad.subject)} {sparql_term(quad.predicate)} {sparql_term(quad.object)} ."
        graph = "" if isinstance(quad.graph_name, DefaultGraph) else sparql_term(quad.graph_name)
        by_graph.setdefault(graph, []).append(line)
    if not by_graph:
        return ""
    blocks = [
        "\n".join(lines) + "\n" if not graph else f"GRAPH {graph} {{\n" + "\n".join(lines) + "\n}\n"
        for graph, lines in by_graph.items()
    ]
    return f"{keyword} DATA {{\n" + "".join(blocks) + "}"


class NotDataUpdate(ValueError):
    """An update with an operation other than INSERT DATA and DELETE DATA."""


def data_operations(update: str, base_iri: str | None) -> list[tuple[str, list[Quad]]]:
    """The quads of an update made only of INSERT DATA and DELETE DATA operations, as
    ("INSERT" | "DELETE", quads) in order. Each data block is read as TriG (with the prologue so
    far), which holds every quad SPARQL's data blocks can; the caller runs the update rebuilt
    from these quads (`insert_data` / `delete_data`), so what was checked is what runs.
    Raises NotDataUpdate for any other operation and QuerySyntaxError for a bad block."""
    found = tokens(update)
    prologue: list[str] = []
    operations: list[tuple[str, list[Quad]]] = []
    index = 0
    while index < len(found):
        keyword = _keyword(found[index])
        if keyword in ("PREFIX", "BASE"):
            width = 3 if keyword == "PREFIX" else 2
            end = found[min(index + width, len(found)) - 1].end
            prologue.append(update[found[index].start : end])
            index += width
        elif keyword in ("INSERT", "DELETE") and index + 2 < len(found) and _keyword(found[index + 1]) == "DATA":
            if found[index + 2].kind != "open":
                raise QuerySyntaxError(f"{keyword} DATA needs a block in braces")
            close = matching_close(found, index + 2)
            block = update[found[index + 2].end : found[close].start]
            operations.append((keyword, _trig_quads("\n".join(prologue) + "\n" + block, base_iri)))
            index = close + 1
        elif found[index].kind == "semicolon" and operations:
            index += 1
        else:
            raise NotDataUpdate(
                f"the update has {found[index].text[:40]!r} where only INSERT DATA or DELETE DATA may be"
            )
    return operations


def _trig_quads(text: str, base_iri: str | None) -> list[Quad]:
    try:
        return list(parse(text.encode("utf-8"), format=RdfFormat.TRIG, base_iri=base_iri))
    except SyntaxError as error:
        raise QuerySyntaxError(f"update syntax error in a data block: {error}") from None


VALUES_BATCH = 2_000  # rows per VALUES block: Virtuoso refuses a query with ~13k (the keys of a big batch)


def slices(items: Sequence[T], size: int = VALUES_BATCH) -> Iterator[Sequence[T]]:
    """`items` in runs of `size`, for queries whose VALUES would otherwise grow with the input."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def values(variable: str, terms: Iterable[object]) -> str:
    return f"VALUES ?{variable} {{ " + " ".join(sparql_term(t) for t in terms) + " }"


def fact_values(facts: Iterable[Triple]) -> str:
    """`VALUES (?s ?p ?o)` of the facts: bound before a triple-term pattern, each is looked up."""
    rows = " ".join(f"({sparql_term(f.subject)} {sparql_term(f.predicate)} {sparql_term(f.object)})" for f in facts)
    return f"VALUES (?s ?p ?o) {{ {rows} }}"
