"""A trace read back from its graph (`/api/v1/traces/{id}`, the trace page): `read_trace` turns
the trace's triples into the traced values trace.py wrote and makes of them the same views
(views.py) a fresh answer is made of, so the answer and its trace cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyoxigraph import NamedNode, Triple

from sparqlrag.retrieval.document_rag import passages_of
from sparqlrag.retrieval.trace import TracedEdge, TracedPageRankSeed, TracedSeed, TracedSource
from sparqlrag.retrieval.views import (
    EdgeView,
    PageRankSeedView,
    ScopeView,
    SeedView,
    SourceView,
    Step,
    TraceRecord,
)
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.facts import fact_labels, fact_text, labels_of, node_labels
from sparqlrag.store.select import count, lexical, number, select, select_terms
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import Iris

Items = Callable[[str, str, str], list[dict[str, Any]]]
"""A trace's details of one kind: (link property, pattern, variables) -> rows (read_trace's `items`)."""


def read_trace(store: QuadStore, iris: Iris, trace_id: str) -> TraceRecord | None:
    """One trace as JSON (the same data as its triples in the trace graph); None if unknown."""
    node = iris.trace(trace_id)
    graph, subject = sparql_term(iris.trace_graph), sparql_term(node)
    head = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""SELECT ?p ?o WHERE {{ GRAPH {graph} {{ {subject} ?p ?o FILTER(isLiteral(?o)) }} }}""",
    )
    if not head:
        return None
    fields = {
        row["p"].removeprefix(vocab.SR).removeprefix(vocab.PROV): row["o"]
        for row in head
        if row["p"] not in (vocab.SR_CONCEPT.value, vocab.SR_CARRIED_TERM.value)
    }

    def items(prop: str, body: str, names: str) -> list[dict[str, Any]]:
        return [
            dict(row)
            for row in select_terms(
                store,
                vocab.SPARQL_PREFIXES
                + f"""SELECT {names} WHERE {{ GRAPH {graph} {{
            {subject} {prop} ?item . {body} }} }}""",
            )
        ]

    seeds = items(
        "sr:seed",
        "?item sr:entity ?entity ; sr:score ?score ; sr:concept ?concept "
        "OPTIONAL { ?item sr:fact <<( ?fact_s ?fact_p ?fact_o )>> } OPTIONAL { ?item sr:alias ?alias }",
        "?entity ?score ?concept ?fact_s ?fact_p ?fact_o ?alias",
    )
    pagerank_seeds = items(
        "sr:pagerankSeed",
        "?item sr:entity ?entity ; sr:weight ?weight OPTIONAL { ?item sr:fact <<( ?fact_s ?fact_p ?fact_o )>> }",
        "?item ?entity ?weight ?fact_s ?fact_p ?fact_o",
    )
    steps = items("sr:step", "?item rdfs:label ?name ; sr:index ?index ; sr:durationMs ?ms", "?name ?index ?ms")
    traced_seeds = sorted(map(_seed, seeds), key=lambda s: -s.score)
    traced_pagerank = _pagerank_seeds(pagerank_seeds)
    edges = _edges(store, iris, items)
    sources = _sources(store, iris, items)
    facts = [
        *(f for e in edges for f in (e.fact, e.via) if f is not None),
        *(s.fact for s in traced_seeds if s.fact),
        *(f for s in traced_pagerank for f in s.facts),
        *(s.supports for s in sources if s.supports),
        *(f for s in sources for f in s.bridged_by),
    ]
    named = {term.value for f in facts for term in f if isinstance(term, NamedNode)}
    entities = {s.entity for s in traced_seeds} | {s.entity for s in traced_pagerank}
    labels = node_labels(store, iris, named | entities)
    return TraceRecord(
        id=trace_id,
        iri=node.value,
        question=fields.get("question"),
        mode=fields.get("mode"),
        answer=fields.get("answer"),
        model=fields.get("model"),
        scorer=fields.get("scorer"),
        started=fields.get("startedAtTime"),
        ended=fields.get("endedAtTime"),
        duration_ms=number(fields.get("durationMs"), 0),
        input_tokens=int(number(fields.get("inputTokens"), 0) or 0),
        output_tokens=int(number(fields.get("outputTokens"), 0) or 0),
        explored_edges=None if (explored := number(fields.get("exploredEdges"))) is None else int(explored),
        concepts=[row["o"] for row in head if row["p"] == vocab.SR_CONCEPT.value],
        seeds=[SeedView.traced(seed, labels[seed.entity]) for seed in traced_seeds],
        pagerank_seeds=[PageRankSeedView.traced(seed) for seed in traced_pagerank],
        edges=[EdgeView.traced(edge) for edge in edges],
        sources=_source_views(store, iris, sources, labels),
        steps=[
            Step(name=lexical(s["name"]), ms=number(s["ms"], 0))
            for s in sorted(steps, key=lambda s: number(s["index"], 0) or 0)
        ],
        labels=labels,
        scope=_scope(store, node, graph, fields),
        asked_as=fields.get("askedAs"),
        turn=count(fields.get("turn")),
        carried=sorted(row["o"] for row in head if row["p"] == vocab.SR_CARRIED_TERM.value),
    )


def _scope(store: QuadStore, node: NamedNode, graph: str, fields: dict[str, str]) -> ScopeView | None:
    """The trace's scope, if the question had one (its chunk count is written whenever it had)."""
    chunks = count(fields.get("scopeChunks"))
    if chunks is None:
        return None
    link = f"{sparql_term(node)} {sparql_term(vocab.SR_SCOPE_DOCUMENT)} ?d"
    documents = select(store, f"SELECT ?d WHERE {{ GRAPH {graph} {{ {link} }} }}")
    return ScopeView(chunks=chunks, documents=sorted(row["d"] for row in documents), pattern=fields.get("scopePattern"))


def _fact(row: dict[str, Any], name: str) -> Triple | None:
    """The fact a row binds as `?{name}_s ?{name}_p ?{name}_o` (matched as `<<( )>>`, so that a
    store of RDF 1.1 reification answers the same), or None."""
    if f"{name}_s" not in row:
        return None
    return Triple(row[f"{name}_s"], row[f"{name}_p"], row[f"{name}_o"])


def _seed(row: dict[str, Any]) -> TracedSeed:
    alias = lexical(row["alias"]) if "alias" in row else None
    return TracedSeed(
        lexical(row["entity"]), number(row["score"], 0) or 0.0, lexical(row["concept"]), _fact(row, "fact"), alias
    )


def _pagerank_seeds(rows: list[dict[str, Any]]) -> list[TracedPageRankSeed]:
    """One seed per item, with its facts, heaviest first."""
    by_item: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_item.setdefault(lexical(row["item"]), []).append(row)
    seeds = [
        TracedPageRankSeed(
            lexical(group[0]["entity"]),
            number(group[0]["weight"], 0) or 0.0,
            tuple(f for row in group if (f := _fact(row, "fact")) is not None),
        )
        for group in by_item.values()
    ]
    return sorted(seeds, key=lambda s: -s.weight)


def _edges(store: QuadStore, iris: Iris, items: Items) -> list[TracedEdge]:
    """The selected edges, best first, named by the graph's labels as the walk named them."""
    rows = items(
        "sr:selectedEdge",
        "?item sr:fact <<( ?fact_s ?fact_p ?fact_o )>> ; sr:score ?score ; sr:hop ?hop ; sr:concept ?concept "
        "OPTIONAL { ?item sr:relevance ?relevance } OPTIONAL { ?item sr:evidenceSentence ?sentence } "
        "OPTIONAL { ?item sr:statement ?statement } OPTIONAL { ?item sr:reasoning ?reasoning } OPTIONAL "
        "{ ?item sr:via <<( ?via_s ?via_p ?via_o )>> }",
        "?item ?fact_s ?fact_p ?fact_o ?score ?hop ?concept ?relevance ?sentence ?statement ?reasoning "
        "?via_s ?via_p ?via_o",
    )
    chunks: dict[str, list[str]] = {}
    for row in items("sr:selectedEdge", "?item sr:evidenceChunk ?chunk", "?item ?chunk"):
        chunks.setdefault(lexical(row["item"]), []).append(lexical(row["chunk"]))
    facts = [fact for row in rows for fact in (_fact(row, "fact"), _fact(row, "via")) if fact is not None]
    labels = labels_of(store, iris, facts)
    edges = []
    for row in rows:
        fact, via = _fact(row, "fact"), _fact(row, "via")
        assert fact is not None  # the pattern requires it
        edges.append(
            TracedEdge(
                fact,
                lexical(row["statement"]) if "statement" in row else None,
                number(row["score"], 0) or 0.0,
                int(number(row["hop"], 0) or 0),
                lexical(row["concept"]),
                lexical(row["reasoning"]) if "reasoning" in row else None,
                via,
                fact_labels(fact, labels),
                fact_labels(via, labels) if via is not None else None,
                number(row.get("relevance"), 0) or 0.0,
                lexical(row["sentence"]) if "sentence" in row else None,
                tuple(chunks.get(lexical(row["item"]), [])),
            )
        )
    return sorted(edges, key=lambda e: -e.score)


def _sources(store: QuadStore, iris: Iris, items: Items) -> list[TracedSource]:
    rows = items(
        "sr:source",
        "?item sr:chunk ?chunk ; sr:rank ?rank ; sr:score ?score "
        "OPTIONAL { ?item sr:supports <<( ?supports_s ?supports_p ?supports_o )>> }",
        "?chunk ?rank ?score ?supports_s ?supports_p ?supports_o",
    )
    carriers = items(
        "sr:source",
        "?item sr:chunk ?chunk { ?item sr:carriedBy ?entity } UNION { ?item sr:carriedByStatement ?statement }",
        "?chunk ?entity ?statement",
    )
    bridges = items(
        "sr:source",
        "?item sr:chunk ?chunk ; sr:bridgedBy <<( ?fact_s ?fact_p ?fact_o )>>",
        "?chunk ?fact_s ?fact_p ?fact_o",
    )
    sources = sorted(
        (
            TracedSource(
                lexical(row["chunk"]),
                int(number(row["rank"], 0) or 0),
                number(row["score"], 0) or 0.0,
                _fact(row, "supports"),
                tuple(sorted(lexical(c["entity"]) for c in carriers if c["chunk"] == row["chunk"] and "entity" in c)),
                tuple(
                    sorted(lexical(c["statement"]) for c in carriers if c["chunk"] == row["chunk"] and "statement" in c)
                ),
                tuple(f for b in bridges if b["chunk"] == row["chunk"] and (f := _fact(b, "fact")) is not None),
            )
            for row in rows
        ),
        key=lambda s: s.rank,
    )
    return sources


def _source_views(
    store: QuadStore, iris: Iris, sources: list[TracedSource], labels: dict[str, str]
) -> list[SourceView]:
    """The sources with their passages (while their documents last) and their bridges' facts
    named by the trace's `labels`."""
    passages = {p.chunk: p for p in passages_of(store, iris, [s.chunk for s in sources], {})}
    texts = {fact: fact_text(fact, labels) for s in sources for fact in s.bridged_by}
    return [SourceView.traced(s, passages.get(s.chunk), texts) for s in sources]
