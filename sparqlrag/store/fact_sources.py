"""Reading provenance back (docs/architecture.md, "Data model"): which chunks of which documents a fact
came from, through its reifier in the collection's source graph."""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import NamedNode, Triple

from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import Term, select_terms
from sparqlrag.store.sparql_text import fact_values, slices, sparql_term, values
from sparqlrag.store.vocab import Iris


def fact_sources(store: QuadStore, iris: Iris, facts: list[Triple]) -> list[dict[str, Term]]:
    """Rows (s, p, o, st, sentence?, chunk): each fact's reifier, evidence sentence and chunks of
    ready documents. One query; the facts are bound before the triple-term pattern, so each is
    looked up, not scanned for. No chunk texts: callers fetch those for the few they show."""
    if not facts:
        return []
    return select_terms(
        store,
        vocab.SPARQL_PREFIXES
        + f"""
        SELECT ?s ?p ?o ?st ?sentence ?chunk WHERE {{ {fact_values(facts)}
          GRAPH {sparql_term(iris.source_graph)} {{
            ?st rdf:reifies <<( ?s ?p ?o )>> ; prov:wasDerivedFrom ?chunk . OPTIONAL {{ ?st sr:sentence ?sentence }}
            ?chunk prov:wasDerivedFrom ?doc . ?doc sr:status "{vocab.READY}" }} }}""",
    )


def facts_stated_in(store: QuadStore, iris: Iris, chunks: Iterable[str]) -> list[dict[str, Term]]:
    """Rows (s, p, o, st): the facts extracted from the chunks, with their reifiers; asked
    VALUES_BATCH chunks at a time."""
    found: list[dict[str, Term]] = []
    for some in slices(sorted(chunks)):
        found += select_terms(
            store,
            vocab.SPARQL_PREFIXES
            + f"""
            SELECT DISTINCT ?s ?p ?o ?st WHERE {{ {values("chunk", map(NamedNode, some))}
              GRAPH {sparql_term(iris.source_graph)} {{
                ?st prov:wasDerivedFrom ?chunk ; rdf:reifies <<( ?s ?p ?o )>> }} }}""",
        )
    return found
