"""The explainability trace: one PROV-O activity per answered question, in the trace graph.

Graph RAG adds its own steps (concepts, seeds, edges) to the same record; Document RAG
records the question, the retrieval mode, every passage used with its rank and score, the
answer, the model and token counts, and the time taken. trace_json.py writes the JSON of an
answer's parts, and reads a trace's triples back into the same JSON.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, RdfFormat, Triple, serialize

from sparqlrag.models.llm import Completion
from sparqlrag.retrieval.scope import Scope
from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import number, select
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

XSD_DOUBLE = NamedNode(vocab.XSD + "double")
XSD_DATETIME = NamedNode(vocab.XSD + "dateTime")


@dataclass(frozen=True)
class TracedSource:
    chunk: str
    rank: int
    score: float
    supports: Triple | None = None  # Graph RAG: the best fact the chunk is evidence for
    carried_by: tuple[str, ...] = ()  # PageRank: the entities whose rank flowed into the passage most
    carried_by_statements: tuple[str, ...] = ()  # and the reifiers of the passage's facts that name them
    bridged_by: tuple[Triple, ...] = ()  # a bridge passage's: the walk's facts that brought it, after Document RAG's


@dataclass(frozen=True)
class TracedPageRankSeed:
    entity: str
    weight: float
    facts: tuple[Triple, ...]  # the facts near the question that name it


@dataclass(frozen=True)
class TracedSeed:
    entity: str
    score: float
    concept: str
    fact: Triple | None = None  # a fact seed: the fact near the question whose end this entity is
    alias: str | None = None  # the entity's other name the concept matched ("W3C"), when not its label
    label: str | None = field(default=None, compare=False)  # its name, when grounding knows it (not traced)


@dataclass(frozen=True)
class TracedEdge:
    fact: Triple
    statement: str | None  # the reifier, when the fact has provenance
    score: float
    hop: int
    concept: str
    reasoning: str | None = None
    via: Triple | None = None  # the fact that led the walk to this one
    labels: tuple[str, str, str] = ("", "", "")  # the fact's terms by their names in the graph
    via_labels: tuple[str, str, str] | None = None
    relevance: float = 0.0  # its text against the best-matching concept
    sentence: str | None = None  # the sentence it was read from
    chunks: tuple[str, ...] = ()  # the chunks it was read from


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD_DOUBLE)


def _item(
    node: NamedNode, link: NamedNode, kind: NamedNode, graph: NamedNode, *values: tuple[NamedNode, Any]
) -> tuple[BlankNode, list[Quad]]:
    """A detail of a trace: a blank node the trace links to, of its class, with its values."""
    item = BlankNode()
    return item, [
        Quad(node, link, item, graph),
        Quad(item, vocab.RDF_TYPE, kind, graph),
        *(Quad(item, predicate, value, graph) for predicate, value in values),
    ]


class Stage:
    """Times a stage into the trace: `with Stage(trace, "grounding"):`."""

    def __init__(self, trace: Trace, name: str) -> None:
        self.trace, self.name = trace, name

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.trace.steps[self.name] = 1000 * (time.perf_counter() - self.started)


@dataclass(frozen=True)
class FollowUp:
    """A question asked after others in a conversation, as it was made to stand alone: the
    turn's own words, its place, and the terms carried from earlier turns (offline) or the
    model that rewrote it (with its tokens)."""

    asked: str
    turn: int
    carried: tuple[str, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0


class Framing(TypedDict, total=False):
    """What frames a question beside its words, as the RAGs' public calls take it."""

    scope: Scope | None  # the chunks it may be answered from
    follow_up: FollowUp | None  # how a conversation's question was made to stand alone


@dataclass
class Trace:
    question: str
    mode: str
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    sources: list[TracedSource] = field(default_factory=list)
    answer: str = ""
    model: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    concepts: list[str] = field(default_factory=list)
    seeds: list[TracedSeed] = field(default_factory=list)
    explored: int | None = None
    edges: list[TracedEdge] = field(default_factory=list)
    pagerank_seeds: list[TracedPageRankSeed] = field(default_factory=list)
    steps: dict[str, float] = field(default_factory=dict)  # stage -> milliseconds, in order
    scorer: str | None = None  # what ranked the facts or passages, e.g. "flashrank:ms-marco-TinyBERT-L-2-v2"
    scope: Scope | None = None  # the chunks the question was limited to, and what picked them
    follow_up: FollowUp | None = None  # a conversation's question made to stand alone: how

    def __post_init__(self) -> None:
        if self.follow_up is not None:  # (rewriting the question is part of what it cost)
            self.input_tokens += self.follow_up.input_tokens
            self.output_tokens += self.follow_up.output_tokens

    def count(self, completion: Completion) -> None:
        """Adds an LLM call's tokens: every call a question costs is counted on its trace."""
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens

    @property
    def usage(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}

    def quads(self, iris: Iris, ended: datetime | None = None) -> list[Quad]:
        ended = ended or datetime.now(UTC)
        node, graph = iris.trace(self.id), iris.trace_graph
        quads = [
            Quad(node, vocab.RDF_TYPE, vocab.SR_TRACE, graph),
            Quad(node, vocab.SR_QUESTION, Literal(self.question), graph),
            Quad(node, vocab.SR_MODE, Literal(self.mode), graph),
            Quad(node, vocab.SR_ANSWER, Literal(self.answer), graph),
            Quad(node, vocab.PROV_STARTED, Literal(self.started.isoformat(), datatype=XSD_DATETIME), graph),
            Quad(node, vocab.PROV_ENDED, Literal(ended.isoformat(), datatype=XSD_DATETIME), graph),
            Quad(node, vocab.SR_DURATION, _double((ended - self.started).total_seconds() * 1000), graph),
            Quad(node, vocab.SR_INPUT_TOKENS, Literal(self.input_tokens), graph),
            Quad(node, vocab.SR_OUTPUT_TOKENS, Literal(self.output_tokens), graph),
        ]
        if self.model:
            quads.append(Quad(node, vocab.SR_MODEL, Literal(self.model), graph))
        if self.scorer:
            quads.append(Quad(node, vocab.SR_SCORER, Literal(self.scorer), graph))
        if self.follow_up is not None:
            quads.append(Quad(node, vocab.SR_ASKED_AS, Literal(self.follow_up.asked), graph))
            quads.append(Quad(node, vocab.SR_TURN, Literal(self.follow_up.turn), graph))
            quads += [Quad(node, vocab.SR_CARRIED_TERM, Literal(term), graph) for term in self.follow_up.carried]
        if self.scope is not None:
            quads.append(Quad(node, vocab.SR_SCOPE_CHUNKS, Literal(len(self.scope.chunks)), graph))
            quads += [Quad(node, vocab.SR_SCOPE_DOCUMENT, NamedNode(d), graph) for d in self.scope.documents]
            if self.scope.pattern is not None:
                quads.append(Quad(node, vocab.SR_SCOPE_PATTERN, Literal(self.scope.pattern), graph))
        for source in self.sources:
            item = BlankNode()
            chunk = NamedNode(source.chunk)
            quads += [
                Quad(node, vocab.PROV_USED, chunk, graph),
                Quad(node, vocab.SR_SOURCE, item, graph),
                Quad(item, vocab.RDF_TYPE, vocab.SR_SOURCE_CLASS, graph),
                Quad(item, vocab.SR_CHUNK_OF_SOURCE, chunk, graph),
                Quad(item, vocab.SR_RANK, Literal(source.rank), graph),
                Quad(item, vocab.SR_SCORE, _double(source.score), graph),
            ]
            if source.supports:
                quads.append(Quad(item, vocab.SR_SUPPORTS, source.supports, graph))
            quads += [Quad(item, vocab.SR_BRIDGED_BY, fact, graph) for fact in source.bridged_by]
            quads += [Quad(item, vocab.SR_CARRIED_BY, NamedNode(e), graph) for e in source.carried_by]
            quads += [
                Quad(item, vocab.SR_CARRIED_BY_STATEMENT, NamedNode(s), graph) for s in source.carried_by_statements
            ]
        return quads + self._graph_quads(node, graph)

    def _graph_quads(self, node: NamedNode, graph: NamedNode) -> list[Quad]:
        """Graph RAG's steps: concepts, seeds, explored and selected edges, stage timings."""
        quads = [Quad(node, vocab.SR_CONCEPT, Literal(concept), graph) for concept in self.concepts]
        if self.explored is not None:
            quads.append(Quad(node, vocab.SR_EXPLORED, Literal(self.explored), graph))
        for seed in self.seeds:
            item, described = _item(
                node,
                vocab.SR_SEED,
                vocab.SR_SEED_CLASS,
                graph,
                (vocab.SR_ENTITY, NamedNode(seed.entity)),
                (vocab.SR_SCORE, _double(seed.score)),
                (vocab.SR_CONCEPT, Literal(seed.concept)),
                *([(vocab.SR_FACT, seed.fact)] if seed.fact is not None else []),
                *([(vocab.SR_ALIAS, Literal(seed.alias))] if seed.alias else []),
            )
            quads += described
        for pagerank_seed in self.pagerank_seeds:
            item, described = _item(
                node,
                vocab.SR_PAGERANK_SEED,
                vocab.SR_PAGERANK_SEED_CLASS,
                graph,
                (vocab.SR_ENTITY, NamedNode(pagerank_seed.entity)),
                (vocab.SR_WEIGHT, _double(pagerank_seed.weight)),
                *[(vocab.SR_FACT, fact) for fact in pagerank_seed.facts],
            )
            quads += described
        for edge in self.edges:
            item, described = _item(
                node,
                vocab.SR_SELECTED_EDGE,
                vocab.SR_SELECTED_EDGE_CLASS,
                graph,
                (vocab.SR_FACT, edge.fact),
                (vocab.SR_SCORE, _double(edge.score)),
                (vocab.SR_HOP, Literal(edge.hop)),
                (vocab.SR_CONCEPT, Literal(edge.concept)),
                (vocab.SR_RELEVANCE, _double(edge.relevance)),
                *([(vocab.SR_EVIDENCE_SENTENCE, Literal(edge.sentence))] if edge.sentence else []),
                *[(vocab.SR_EVIDENCE_CHUNK, NamedNode(chunk)) for chunk in edge.chunks],
            )
            quads += described
            if edge.statement:
                statement = NamedNode(edge.statement)
                quads += [
                    Quad(item, vocab.SR_STATEMENT_OF_EDGE, statement, graph),
                    Quad(node, vocab.PROV_USED, statement, graph),
                ]
            if edge.reasoning:
                quads.append(Quad(item, vocab.SR_REASONING, Literal(edge.reasoning), graph))
            if edge.via:
                quads.append(Quad(item, vocab.SR_VIA, edge.via, graph))
        for index, (stage, ms) in enumerate(self.steps.items()):
            quads += _item(
                node,
                vocab.SR_STEP,
                vocab.SR_STEP_CLASS,
                graph,
                (vocab.RDFS_LABEL, Literal(stage)),
                (vocab.SR_INDEX, Literal(index)),
                (vocab.SR_DURATION, _double(ms)),
            )[1]
        return quads


@dataclass(frozen=True)
class Retention:
    """How many traces a collection keeps (0: all), and for how long (None: forever)."""

    keep: int = 10_000
    max_age: timedelta | None = None


class TraceLog:
    """Writes traces, and keeps each collection's trace graph within its retention as it goes.

    Traces are the explainability record, so every answer writes one; but any reader can ask
    questions, so without a bound a reader could grow the store for ever. Past `keep` traces,
    the oldest go, a hundredth of `keep` beyond the excess at a time (one DELETE per hundred
    answers, not per answer); traces older than `max_age` go at most once a minute.
    """

    AGE_CHECK_INTERVAL = timedelta(minutes=1)

    def __init__(self, store: QuadStore, retention: Retention) -> None:
        self.store, self.retention = store, retention
        self._counts: dict[str, int] = {}  # traces per collection, as far as this log knows
        self._age_checked: dict[str, datetime] = {}
        self._lock = threading.Lock()

    async def write(self, iris: Iris, trace: Trace) -> str:
        """Store the trace; returns its IRI."""
        await off_loop(self._write, iris, trace)
        return iris.trace(trace.id).value

    def _write(self, iris: Iris, trace: Trace) -> None:
        self.store.add_quads(serialize(trace.quads(iris), format=RdfFormat.N_QUADS) or b"")
        with self._lock:
            collection = iris.collection
            count = self._counts.get(collection)
            self._counts[collection] = count = (count + 1) if count is not None else self._count(iris)
            if self.retention.keep and count > self.retention.keep:
                count = self._count(iris)  # exact before deleting: traces also leave by other ways
                excess = count - self.retention.keep
                if excess > 0:
                    self._delete(iris, f"ORDER BY ?started LIMIT {excess + self.retention.keep // 100}")
                    count = self._count(iris)
                self._counts[collection] = count
            now = datetime.now(UTC)
            if (
                self.retention.max_age
                and now - self._age_checked.get(collection, now - 2 * self.AGE_CHECK_INTERVAL) > self.AGE_CHECK_INTERVAL
            ):
                self._age_checked[collection] = now
                cutoff = Literal((now - self.retention.max_age).isoformat(), datatype=XSD_DATETIME)
                self._delete(iris, "", f"FILTER(?started < {sparql_term(cutoff)})")
                self._counts[collection] = self._count(iris)

    def _count(self, iris: Iris) -> int:
        rows = select(
            self.store,
            vocab.SPARQL_PREFIXES + f"SELECT (COUNT(?trace) AS ?n) WHERE {{ GRAPH {sparql_term(iris.trace_graph)} "
            "{ ?trace a sr:Trace } }",
        )
        return int(rows[0]["n"])

    def _delete(self, iris: Iris, modifiers: str, condition: str = "") -> None:
        """Delete the traces the subquery picks, with the blank nodes that hold their details
        (and, on a store of RDF 1.1 reification, the blank nodes that state their facts)."""
        graph = sparql_term(iris.trace_graph)
        self.store.update(
            vocab.SPARQL_PREFIXES
            + f"""
            DELETE {{ GRAPH {graph} {{ ?trace ?p ?o . ?item ?ip ?io . ?stated ?sp ?so }} }}
            WHERE {{
              {{ SELECT ?trace WHERE {{ GRAPH {graph} {{ ?trace a sr:Trace ; prov:startedAtTime ?started {condition}
                }} }} {modifiers} }}
              GRAPH {graph} {{ {{ ?trace ?p ?o }} UNION {{ ?trace ?link ?item FILTER(isBlank(?item)) ?item ?ip ?io }}
                UNION {{ ?trace ?link ?item FILTER(isBlank(?item)) ?item ?ip ?stated FILTER(isBlank(?stated))
                  ?stated ?sp ?so }} }}
            }}"""
        )


def trace_exists(store: QuadStore, iris: Iris, trace_id: str) -> bool:
    """Whether the collection's trace graph holds the trace (one lookup, not its whole record)."""
    node, graph = sparql_term(iris.trace(trace_id)), sparql_term(iris.trace_graph)
    return bool(
        select(store, vocab.SPARQL_PREFIXES + f"SELECT ?t WHERE {{ GRAPH {graph} {{ {node} a sr:Trace }} }} LIMIT 1")
    )


def list_traces(store: QuadStore, iris: Iris, limit: int = 50) -> list[dict[str, Any]]:
    """The collection's traces, newest first: what each asked and answered, when, how long."""
    rows = select(
        store,
        vocab.SPARQL_PREFIXES
        + f"""
        SELECT ?trace ?question ?mode ?answer ?started ?ms WHERE {{ GRAPH {sparql_term(iris.trace_graph)} {{
          ?trace a sr:Trace ; sr:question ?question ; sr:mode ?mode ; sr:answer ?answer ;
                 prov:startedAtTime ?started ; sr:durationMs ?ms }} }} ORDER BY DESC(?started) LIMIT {int(limit)}""",
    )
    prefix = iris.trace("").value
    return [
        {
            "id": row["trace"].removeprefix(prefix),
            "iri": row["trace"],
            "question": row["question"],
            "mode": row["mode"],
            "answer": row["answer"],
            "started": row["started"],
            "duration_ms": number(row["ms"]),
        }
        for row in rows
    ]
