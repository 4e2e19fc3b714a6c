"""Aliases as entity resolution writes them: `alias owl:sameAs target` in a collection's
knowledge graph, chains ending at the canonical IRI (extraction/resolution.py). Readers that
meet an alias IRI (grounding, linked-data pages) follow it here. A loaded graph's own
owl:sameAs (between IRIs resolution did not mint both of) says two IRIs name one thing:
grounding on one seeds the other too (`equivalents`)."""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import NamedNode

from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import select
from sparqlrag.store.sparql_text import sparql_term, values
from sparqlrag.store.vocab import Iris


def chain(iris: Iris, start: str, end: str) -> str:
    """A pattern (in the knowledge graph) binding the variable `end` to the canonical IRI of
    `start`: where its owl:sameAs chain among the collection's entities ends (an owl:sameAs a
    user loaded to another dataset's IRI is no alias)."""
    ours = f'STRSTARTS(STR({end}), "{iris.entity("").value}")'
    return (
        f"{start} owl:sameAs* {end} FILTER({ours}) "
        f"FILTER NOT EXISTS {{ {end} owl:sameAs ?further FILTER({ours.replace(end, '?further')}) }}"
    )


def canonicals(store: QuadStore, iris: Iris, entities: Iterable[str]) -> dict[str, str]:
    """The canonical IRI of each of `entities` that is an alias (those that are not are left out)."""
    asked = sorted(set(entities))
    if not asked:
        return {}
    rows = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT ?e (MIN(STR(?c)) AS ?canonical) WHERE {{ {values("e", map(NamedNode, asked))}
        GRAPH {sparql_term(iris.knowledge_graph)} {{ ?e owl:sameAs ?next . {chain(iris, "?next", "?c")} }} }}
        GROUP BY ?e""",
    )  # the chain starts at a node a triple binds: Virtuoso follows no path from a VALUES row
    return {row["e"]: row["canonical"] for row in rows if row.get("canonical") and row["canonical"] != row["e"]}


def equivalents(store: QuadStore, iris: Iris, entities: Iterable[str], limit: int) -> dict[str, list[str]]:
    """The IRIs each of `entities` is owl:sameAs to in the knowledge graph, either way, at most
    `limit` each; not a pair whose two ends resolution minted (those are `canonicals`')."""
    asked = sorted(set(entities))
    if not asked:
        return {}
    ours = f'STRSTARTS(STR(%s), "{iris.entity("").value}")'
    rows = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT DISTINCT ?e ?same WHERE {{ {values("e", map(NamedNode, asked))}
        GRAPH {sparql_term(iris.knowledge_graph)} {{ {{ ?e owl:sameAs ?same }} UNION {{ ?same owl:sameAs ?e }} }}
        FILTER(isIRI(?same) && ?same != ?e && !({ours % "?e"} && {ours % "?same"}))
        FILTER EXISTS {{ GRAPH {sparql_term(iris.knowledge_graph)} {{ {{ ?same ?p ?x }} UNION {{ ?x ?p ?same }}
          FILTER(?p != owl:sameAs) }} }} }} ORDER BY ?e ?same""",
    )
    out: dict[str, list[str]] = {}
    for row in rows:
        same = out.setdefault(row["e"], [])
        if len(same) < limit:
            same.append(row["same"])
    return out
