"""Entity resolution against the store: what a collection holds under the keys of new names,
and which documents must be written again when a merge appears or loses its evidence.

A merge is the reifier of `alias owl:sameAs target` in the source graph, derived from the
chunks that gave the evidence, so forgetting those chunks removes it like any fact. Documents
that used it are then written again from their kept extractions (pipeline `resolve_again`).
"""

from __future__ import annotations

import numpy as np
from pyoxigraph import Literal, NamedNode

from sparqlrag.extraction.names import compared, form_key, name_key, personal_name
from sparqlrag.extraction.resolution import Candidate, Known, Mention
from sparqlrag.models.embedder import Embedder
from sparqlrag.store import vocab
from sparqlrag.store.aliases import chain
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import select, select_values
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vector_index import VectorIndex
from sparqlrag.store.vocab import Iris

NEIGHBOURS = 5  # entity-index neighbours of a person's name searched for its other forms


def _canonical(iris: Iris) -> str:
    """A pattern binding ?canonical to the canonical IRI of ?e (a named entity or an alias),
    with that one's label (?name) and class (?class) when it has them."""
    return f"""GRAPH {sparql_term(iris.knowledge_graph)} {{ ?e rdfs:label|owl:sameAs ?asserted .
        {chain(iris, "?e", "?canonical")} OPTIONAL {{ ?canonical rdfs:label ?name }} OPTIONAL {{ ?canonical a ?class
          }} }}"""


def known(store: QuadStore, iris: Iris, keys: set[str]) -> Known:
    """The collection's entities named (rdfs:label) or aliased (a shared merge) under `keys`,
    each with the canonical IRI its owl:sameAs chain ends at, that one's label and class; and
    the names a person kept apart (a curated owl:differentFrom)."""
    result = Known()
    src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
    rows = select_values(
        store,
        "key",
        map(Literal, sorted(keys)),
        lambda keyed: (
            vocab.SPARQL_PREFIXES
            + f"""
        SELECT ?key ?e ?label ?canonical (SAMPLE(?name) AS ?canonical_label) (SAMPLE(?class) AS ?type) WHERE {{
          {keyed}
          GRAPH {src} {{
            {{ ?st sr:key ?key ; rdf:reifies <<( ?e rdfs:label ?label )>> }}
            UNION {{ ?st sr:key ?key ; sr:alias ?label ; rdf:reifies <<( ?e owl:sameAs ?target )>> }} }}
          {_canonical(iris)}
        }} GROUP BY ?key ?e ?label ?canonical"""
        ),
    )
    for row in rows:
        candidate = Candidate(
            row["e"], row["label"], row["canonical"], row.get("canonical_label") or row["label"], row.get("type")
        )
        if candidate not in result.by_key.setdefault(row["key"], []):
            result.by_key[row["key"]].append(candidate)
    apart = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT ?key ?label WHERE {{
        GRAPH {src} {{ ?d sr:rule "curated" ; sr:key ?key ; rdf:reifies <<( ?alias owl:differentFrom ?e )>> }}
        GRAPH {kg} {{ ?e rdfs:label ?label }} }}""",
    )
    result.kept_apart = {frozenset((row["key"], name_key(row["label"]))) for row in apart}
    return result


def similar(
    store: QuadStore, vectors: VectorIndex, embedder: Embedder, iris: Iris, batch: dict[Mention, tuple[str, str | None]]
) -> dict[str, list[tuple[Candidate, float]]]:
    """The "similar" rule's candidates for the batch's defined names (mention -> its own IRI and
    its definition): the longer and shorter forms of each person's name among the batch's names
    and the collection's entity index, each with the cosine of name + definition embeddings. The
    index is searched by the name's embedding: a form that only adds a middle name or an initial
    is among a name's nearest."""
    people = {m: own for m, own in batch.items() if own[1] and personal_name(m.name)}
    if not people:
        return {}
    pairs: list[tuple[Mention, Candidate, tuple[str, str]]] = []
    by_form: dict[tuple[str, str], list[Mention]] = {}
    for mention in people:
        by_form.setdefault(form_key(mention.name), []).append(mention)
    for mention, (_, definition) in people.items():
        for other in by_form[form_key(mention.name)]:
            texts = compared(mention.name, definition, other.name, people[other][1])
            if texts is not None:
                other_iri = people[other][0]
                pairs.append(
                    (mention, Candidate(other_iri, other.name, other_iri, other.name, other.type, held=False), texts)
                )
    names = list(people)
    hits = vectors.search_many(iris.collection, "entities", embedder.embed([m.name for m in names]), NEIGHBOURS)
    found: dict[str, tuple[str, str | None]] = {}
    asked: list[tuple[Mention, str, tuple[str, str]]] = []
    for mention, near in zip(names, hits):
        iri, definition = people[mention]
        for hit in near:
            texts = compared(mention.name, definition, hit.payload["label"], hit.payload.get("definition"))
            if hit.iri != iri and texts is not None:
                found[hit.iri] = (hit.payload["label"], hit.payload.get("definition"))
                asked.append((mention, hit.iri, texts))
    if asked:
        rows = select(
            store,
            vocab.SPARQL_PREFIXES
            + f"""SELECT ?e ?canonical (SAMPLE(?name) AS ?canonical_label) (SAMPLE(?class) AS ?type)
            WHERE {{ {values("e", map(NamedNode, sorted(found)))} {_canonical(iris)} }} GROUP BY ?e ?canonical""",
        )
        defining = _defining(store, iris, {definition for _, definition in found.values() if definition})
        held = {
            row["e"]: Candidate(
                row["e"],
                found[row["e"]][0],
                row["canonical"],
                row.get("canonical_label") or found[row["e"]][0],
                row.get("type"),
                defined_by=defining.get(found[row["e"]][1] or "", ()),
            )
            for row in rows
        }
        pairs += [
            (mention, held[iri], texts) for mention, iri, texts in asked if iri in held
        ]  # (the index may hold a forgotten one)
    if not pairs:
        return {}
    embedded = embedder.embed([text for _, _, texts in pairs for text in texts])
    scores = np.einsum("ij,ij->i", embedded[0::2], embedded[1::2])
    result: dict[str, list[tuple[Candidate, float]]] = {}
    for (mention, candidate, _), score in zip(pairs, scores):
        result.setdefault(mention.name, []).append((candidate, float(score)))
    return result


def _defining(store: QuadStore, iris: Iris, definitions: set[str]) -> dict[str, tuple[str, ...]]:
    """The chunks that state each definition (of whichever entity it now sits on: a merge may
    have moved it to the canonical IRI)."""
    rows = select_values(
        store,
        "d",
        map(Literal, sorted(definitions)),
        lambda defined: (
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT ?d ?chunk WHERE {{ {defined}
        GRAPH {sparql_term(iris.source_graph)} {{ ?st rdf:reifies <<( ?e skos:definition ?d )>> ; prov:wasDerivedFrom
          ?chunk }} }}"""
        ),
    )
    chunks: dict[str, list[str]] = {}
    for row in rows:
        chunks.setdefault(row["d"], []).append(row["chunk"])
    return {definition: tuple(sorted(found)) for definition, found in chunks.items()}


def _derived(store: QuadStore, iris: Iris, chunks: list[str], variables: str, pattern: str) -> list[dict[str, str]]:
    """The rows of the source graph's reifiers `?st` derived from `chunks` that match `pattern`."""
    if not chunks:
        return []
    return select_values(
        store,
        "chunk",
        map(NamedNode, chunks),
        lambda asked: (
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT {variables} WHERE {{ {asked}
        GRAPH {sparql_term(iris.source_graph)} {{ ?st prov:wasDerivedFrom ?chunk ; {pattern} }} }}"""
        ),
    )


def shared_merges_of(store: QuadStore, iris: Iris, chunks: list[str]) -> dict[str, str]:
    """The shared merges derived from `chunks`: reifier IRI -> the alias's key."""
    rows = _derived(store, iris, chunks, "?st ?key", "sr:key ?key ; rdf:reifies <<( ?a owl:sameAs ?b )>>")
    return {row["st"]: row["key"] for row in rows}


def statements_of(store: QuadStore, iris: Iris, chunks: list[str]) -> tuple[list[str], set[str]]:
    """The statements derived from `chunks` (what removing them deletes), and the entities their facts name."""
    rows = _derived(store, iris, chunks, "?st ?s ?o", "rdf:reifies <<( ?s ?p ?o )>>")
    prefix = iris.entity("").value
    entities = {term for row in rows for term in (row["s"], row["o"]) if term.startswith(prefix)}
    return sorted({row["st"] for row in rows}), entities


def documents_naming(store: QuadStore, iris: Iris, keys: set[str], entities: set[str]) -> set[str]:
    """Documents whose chunks give a thing an alias under one of `keys` (what a lost merge
    resolved), or give an alias to one of `entities` (things that lost their own name)."""
    if not keys and not entities:
        return set()
    rows = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT DISTINCT ?doc WHERE {{
        {{ {values("key", map(Literal, sorted(keys)))} GRAPH {sparql_term(iris.source_graph)} {{ ?st sr:key ?key }} }}
        UNION {{ {values("e", map(NamedNode, sorted(entities)))} GRAPH {sparql_term(iris.knowledge_graph)} {{ ?e
          skos:altLabel ?name }} }}
        GRAPH {sparql_term(iris.source_graph)} {{ ?st rdf:reifies <<( ?e skos:altLabel ?name )>> ;
          prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc }} }}""",
    )
    return {iris.document_id(row["doc"]) for row in rows}


def documents_using(store: QuadStore, iris: Iris, aliases: set[str]) -> set[str]:
    """Documents whose chunks still state facts on (or name) an IRI that is now an alias."""
    if not aliases:
        return set()
    src, kg = sparql_term(iris.source_graph), sparql_term(iris.knowledge_graph)
    rows = select_values(
        store,
        "alias",
        map(NamedNode, sorted(aliases)),
        lambda asked: (
            vocab.SPARQL_PREFIXES
            + f"""SELECT DISTINCT ?doc WHERE {{ {asked}
        GRAPH {kg} {{ {{ ?alias ?p ?o BIND(?alias AS ?s) }} UNION {{ ?s ?p ?alias BIND(?alias AS ?o) }} }}
        FILTER(?p != owl:sameAs)
        GRAPH {src} {{ ?st rdf:reifies <<( ?s ?p ?o )>> ; prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom
          ?doc }} }}"""
        ),
    )
    return {iris.document_id(row["doc"]) for row in rows}
