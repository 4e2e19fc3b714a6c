"""Entity resolution against the store: what a collection holds under the keys of new names,
and which documents must be written again when a merge appears or loses its evidence.

A merge is the reifier of `alias owl:sameAs target` in the source graph, derived from the
chunks that gave the evidence, so forgetting those chunks removes it like any fact. Documents
that used it are then written again from their kept extractions (pipeline `resolve_again`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from pyoxigraph import Literal, NamedNode

from sparqlrag.extraction.resolution import Candidate, Known, name_key
from sparqlrag.store import vocab as v
from sparqlrag.store.aliases import chain
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vocab import Iris


def known(store: Any, iris: Iris, keys: set[str]) -> Known:
    """The collection's entities named (rdfs:label) or aliased (a shared merge) under `keys`,
    each with the canonical IRI its owl:sameAs chain ends at, that one's label and class; and
    the names a person kept apart (a curated owl:differentFrom)."""
    result = Known()
    src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
    rows = select(store, v.SPARQL_PREFIXES + f"""
        SELECT ?key ?e ?label ?canonical (SAMPLE(?name) AS ?canonical_label) (SAMPLE(?class) AS ?type) WHERE {{
          {values("key", map(Literal, sorted(keys)))}
          GRAPH {src} {{
            {{ ?st sr:key ?key ; rdf:reifies <<( ?e rdfs:label ?label )>> }}
            UNION {{ ?st sr:key ?key ; sr:alias ?label ; rdf:reifies <<( ?e owl:sameAs ?target )>> }} }}
          GRAPH {kg} {{ ?e rdfs:label|owl:sameAs ?asserted .
            {chain(iris, "?e", "?canonical")}
            OPTIONAL {{ ?canonical rdfs:label ?name }} OPTIONAL {{ ?canonical a ?class }} }}
        }} GROUP BY ?key ?e ?label ?canonical""") if keys else []  # fmt: skip
    for row in rows:
        candidate = Candidate(row["e"], row["label"], row["canonical"], row.get("canonical_label") or row["label"], row.get("type"))
        if candidate not in result.by_key.setdefault(row["key"], []):
            result.by_key[row["key"]].append(candidate)
    apart = select(store, v.SPARQL_PREFIXES + f"""SELECT ?key ?label WHERE {{
        GRAPH {src} {{ ?d sr:rule "curated" ; sr:key ?key ; rdf:reifies <<( ?alias owl:differentFrom ?e )>> }}
        GRAPH {kg} {{ ?e rdfs:label ?label }} }}""")  # fmt: skip
    result.kept_apart = {frozenset((row["key"], name_key(row["label"]))) for row in apart}
    return result


def shared_merges_of(store: Any, iris: Iris, chunks: list[str]) -> dict[str, str]:
    """The shared merges derived from `chunks`: reifier IRI -> the alias's key."""
    if not chunks:
        return {}
    rows = select(store, v.SPARQL_PREFIXES + f"""SELECT DISTINCT ?st ?key WHERE {{ {values("chunk", map(NamedNode, chunks))}
        GRAPH {sparql_term(iris.source_graph)} {{ ?st prov:wasDerivedFrom ?chunk ; sr:key ?key ;
          rdf:reifies <<( ?a owl:sameAs ?b )>> }} }}""")  # fmt: skip
    return {row["st"]: row["key"] for row in rows}


def documents_naming(store: Any, iris: Iris, keys: set[str], entities: set[str]) -> set[str]:
    """Documents whose chunks give a thing an alias under one of `keys` (what a lost merge
    resolved), or give an alias to one of `entities` (things that lost their own name)."""
    if not keys and not entities:
        return set()
    rows = select(store, v.SPARQL_PREFIXES + f"""SELECT DISTINCT ?doc WHERE {{
        {{ {values("key", map(Literal, sorted(keys)))} GRAPH {sparql_term(iris.source_graph)} {{ ?st sr:key ?key }} }}
        UNION {{ {values("e", map(NamedNode, sorted(entities)))} GRAPH {sparql_term(iris.knowledge_graph)} {{ ?e skos:altLabel ?name }} }}
        GRAPH {sparql_term(iris.source_graph)} {{ ?st rdf:reifies <<( ?e skos:altLabel ?name )>> ;
          prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc }} }}""")  # fmt: skip
    return {document_id(iris, row["doc"]) for row in rows}


def documents_using(store: Any, iris: Iris, aliases: set[str]) -> set[str]:
    """Documents whose chunks still state facts on (or name) an IRI that is now an alias."""
    if not aliases:
        return set()
    src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
    rows = select(store, v.SPARQL_PREFIXES + f"""SELECT DISTINCT ?doc WHERE {{ {values("alias", map(NamedNode, sorted(aliases)))}
        GRAPH {kg} {{ {{ ?alias ?p ?o BIND(?alias AS ?s) }} UNION {{ ?s ?p ?alias BIND(?alias AS ?o) }} }}
        FILTER(?p != owl:sameAs)
        GRAPH {src} {{ ?st rdf:reifies <<( ?s ?p ?o )>> ; prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc }} }}""")  # fmt: skip
    return {document_id(iris, row["doc"]) for row in rows}


def document_id(iris: Iris, document: str) -> str:
    return unquote(document.removeprefix(iris.document("").value))
