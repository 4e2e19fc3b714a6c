"""The document library: what is known about each document, read from the source graph."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from pyoxigraph import Literal, NamedNode

from sparqlrag.store import vocab as v
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import FAILED, PROCESSING, QUEUED, READY, Iris  # noqa: F401 (statuses re-exported)


@dataclass(frozen=True)
class DocumentInfo:
    iri: str
    id: str
    title: str
    source: str
    media_type: str
    sha256: str
    status: str
    progress: float
    created: str
    chunks: int


def documents(store: Any, iris: Iris, document: NamedNode | None = None) -> list[DocumentInfo]:
    """Every document of the collection (or just `document`), oldest first."""
    only = f"VALUES ?doc {{ {sparql_term(document)} }}" if document is not None else ""
    rows = select(store, v.SPARQL_PREFIXES + f"""
        SELECT ?doc ?title ?source ?format ?sha ?status ?progress ?created (COUNT(?chunk) AS ?chunks) WHERE {{
          {only}
          GRAPH {sparql_term(iris.source_graph)} {{
            ?doc a sr:Document ; dcterms:title ?title ; dcterms:source ?source ; dcterms:format ?format ;
                 sr:sha256 ?sha ; sr:status ?status ; dcterms:created ?created .
            OPTIONAL {{ ?doc sr:progress ?progress }}
            OPTIONAL {{ ?chunk prov:wasDerivedFrom ?doc ; a sr:Chunk }}
          }}
        }} GROUP BY ?doc ?title ?source ?format ?sha ?status ?progress ?created ORDER BY ?created ?doc""")  # fmt: skip
    prefix = iris.document("").value
    return [
        DocumentInfo(
            iri=row["doc"], id=unquote(row["doc"].removeprefix(prefix)), title=row["title"], source=row["source"],
            media_type=row["format"], sha256=row["sha"], status=row["status"],
            progress=float(row.get("progress", 1.0 if row["status"] == READY else 0.0)),
            created=row["created"], chunks=int(row["chunks"]),
        )  # fmt: skip
        for row in rows
    ]


def chunks_of(store: Any, iris: Iris, document: NamedNode) -> set[str]:
    rows = select(store, v.SPARQL_PREFIXES + f"""
        SELECT ?chunk WHERE {{ GRAPH {sparql_term(iris.source_graph)} {{
          ?chunk prov:wasDerivedFrom {sparql_term(document)} ; a sr:Chunk }} }}""")  # fmt: skip
    return {row["chunk"] for row in rows}


def status_update(iris: Iris, document: NamedNode, status: str, progress: float | None = None) -> str:
    """SPARQL update operations (no prologue) setting a document's status and progress (0-1)."""
    doc, graph = sparql_term(document), sparql_term(iris.source_graph)
    values = f"{doc} sr:status {sparql_term(Literal(status))}"
    if progress is not None:
        values += f" ; sr:progress {sparql_term(Literal(round(progress, 4)))}"
    return (
        f"DELETE WHERE {{ GRAPH {graph} {{ {doc} sr:status ?status }} }} ;\n"
        f"DELETE WHERE {{ GRAPH {graph} {{ {doc} sr:progress ?progress }} }} ;\n"
        f"INSERT DATA {{ GRAPH {graph} {{ {values} }} }}"
    )

