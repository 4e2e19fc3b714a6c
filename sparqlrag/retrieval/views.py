"""What an answer shows of its facts, seeds, edges and passages: one pydantic model each.

A fresh answer (the route's JSON, its streamed events, MCP) and a trace read back from its graph
(trace_json.py) are made of these same models, and the OpenAPI document's response schemas are
their JSON Schemas, so no two of them can disagree. A field added here appears everywhere; the
trace keeps it once trace.py writes its RDF term and trace_json.py reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field
from pyoxigraph import Literal, Triple

from sparqlrag.store import vocab
from sparqlrag.store.select import lexical

if TYPE_CHECKING:  # (document_rag.py and trace.py make these views: only the types are needed here)
    from sparqlrag.retrieval.document_rag import Passage
    from sparqlrag.retrieval.trace import TracedEdge, TracedPageRankSeed, TracedSeed, TracedSource


class View(BaseModel):
    model_config = ConfigDict(frozen=True)

    def as_json(self) -> dict[str, Any]:
        """The JSON every surface sends."""
        return self.model_dump(mode="json")


class FactView(View):
    """A fact: its subject, predicate and object (IRIs, or the object's literal text)."""

    subject: str
    predicate: str
    object: str
    object_is_literal: bool

    @classmethod
    def of(cls, fact: Triple) -> FactView:
        return cls(**fact_fields(fact))


def fact_fields(fact: Triple) -> dict[str, Any]:
    return {
        "subject": lexical(fact.subject),
        "predicate": fact.predicate.value,
        "object": lexical(fact.object),
        "object_is_literal": isinstance(fact.object, Literal),
    }


class NamedFact(FactView):
    """A fact and its text: its terms by their names in the graph."""

    text: str

    @classmethod
    def named(cls, fact: Triple, text: str) -> NamedFact:
        return cls(**fact_fields(fact), text=text)


class SeedView(View):
    """An entity the walk started from, and how the question reached it."""

    entity: str
    label: str | None = Field(description="its name, where known")
    score: float
    concept: str = Field(description="the concept of the question it grounds")
    alias: str | None = Field(description="the other name of it the concept matched, when not its label")
    fact: FactView | None = Field(description="a fact seed: the fact near the question whose end it is")

    @classmethod
    def traced(cls, seed: TracedSeed, label: str | None = None) -> SeedView:
        return cls(
            entity=seed.entity,
            label=label if label is not None else seed.label,
            score=seed.score,
            concept=seed.concept,
            alias=seed.alias,
            fact=FactView.of(seed.fact) if seed.fact else None,
        )


class PageRankSeedView(View):
    """A node PageRank started from, its weight and the facts near the question that name it."""

    entity: str
    weight: float
    facts: list[FactView]

    @classmethod
    def traced(cls, seed: TracedPageRankSeed) -> PageRankSeedView:
        return cls(entity=seed.entity, weight=seed.weight, facts=[FactView.of(f) for f in sorted(seed.facts, key=str)])


class EdgeView(NamedFact):
    """A fact the walk kept: how it scored, at which hop, through which fact, and where it was read."""

    labels: list[str] = Field(description="subject, predicate and object by their names")
    score: float
    relevance: float = Field(description="its text against the best-matching concept")
    concept: str
    hop: int
    via: NamedFact | None = Field(description="the kept fact that led the walk here (none at hop 1)")
    statement: str | None = Field(description="the fact's reifier, when it has provenance")
    sentence: str | None = Field(description="the sentence it was read from")
    chunks: list[str] = Field(description="the chunks it was read from")
    reasoning: str | None = Field(description="the LLM's reason it matters, when asked for")

    @classmethod
    def traced(cls, edge: TracedEdge) -> EdgeView:
        via = NamedFact.named(edge.via, " ".join(edge.via_labels or ())) if edge.via is not None else None
        return cls(
            **fact_fields(edge.fact),
            text=" ".join(edge.labels),
            labels=list(edge.labels),
            score=edge.score,
            relevance=edge.relevance,
            concept=edge.concept,
            hop=edge.hop,
            via=via,
            statement=edge.statement,
            sentence=edge.sentence,
            chunks=sorted(edge.chunks),
            reasoning=edge.reasoning,
        )


class Copy(View):
    """Another document holding the same text."""

    document: str
    title: str


class PassageView(View):
    """A passage an answer cites: its document, citation (with the page), original file and text."""

    chunk: str
    document: str | None = Field(description="the document id; null once the document is gone")
    title: str | None
    citation: str | None = Field(description='how the answer cites it: "Annual report 2024, p. 3"')
    score: float = Field(description="the ranking's own figure: only its order means something")
    text: str | None
    file: str | None = Field(description="the original file, at the passage's page")
    pages: list[int] | None = Field(description="[first, last] page, for a paged document")
    headings: str | None = Field(description="its heading path")
    copies: list[Copy] = Field(description="other documents holding the same text")
    supports: FactView | None = Field(description="Graph RAG: the best fact the walk kept that it states")

    @classmethod
    def of(cls, passage: Passage) -> PassageView:
        return cls(
            chunk=passage.chunk,
            document=passage.document,
            title=passage.title,
            citation=passage.citation,
            score=passage.score,
            text=passage.text,
            file=vocab.original_file(passage.document, passage.pages[0] if passage.pages else None),
            pages=list(passage.pages) if passage.pages else None,
            headings=passage.headings,
            copies=[Copy(document=document, title=title) for document, title in passage.copies],
            supports=FactView.of(passage.supports) if passage.supports else None,
        )


class SourceView(PassageView):
    """A passage a Graph RAG answer used, as its trace keeps it: rank, what carried it there."""

    rank: int
    carried_by: list[str] = Field(description="PageRank: the entities whose rank flowed into it most")
    carried_by_statements: list[str] = Field(description="the reifiers of its facts that name them")
    bridge: bool = Field(description='"evidence" mode: a passage the graph added after Document RAG\'s')
    bridged_by: list[NamedFact] = Field(description="a bridge's path: the walk's facts that brought it")

    @classmethod
    def traced(cls, source: TracedSource, passage: Passage | None, texts: Mapping[Triple, str]) -> SourceView:
        """The traced source with its passage (None once its document is gone) and each fact's text."""
        found = PassageView.of(passage).as_json() if passage else _GONE
        traced = {
            "chunk": source.chunk,
            "score": source.score,
            "supports": FactView.of(source.supports) if source.supports else None,
        }
        return cls(
            **(found | traced),
            rank=source.rank,
            carried_by=sorted(source.carried_by),  # (a set in the trace graph, so sorted in both)
            carried_by_statements=sorted(source.carried_by_statements),
            bridge=bool(source.bridged_by),
            bridged_by=[NamedFact.named(f, texts.get(f, "")) for f in sorted(source.bridged_by, key=str)],
        )


_GONE: dict[str, Any] = dict.fromkeys(("document", "title", "citation", "text", "file", "pages", "headings"))
_GONE["copies"] = []


class Answered(View):
    """An answer: the question, the text, its trace, and the LLM's part in it."""

    question: str
    answer: str
    trace: str = Field(description="the trace IRI")
    model: str | None = Field(description="the LLM that wrote the answer; null when none did")
    usage: dict[str, int] = Field(description="the LLM's input_tokens and output_tokens")


class DocumentRagAnswer(Answered):
    """`POST /api/v1/document-rag`'s answer."""

    sources: list[PassageView]


class GraphRagAnswer(Answered):
    """`POST /api/v1/graph-rag`'s answer: the text, and the walk that found what it cites."""

    concepts: list[str]
    seeds: list[SeedView]
    explored_edges: int
    edges: list[EdgeView]
    pagerank_seeds: list[PageRankSeedView]
    sources: list[SourceView]


class Step(View):
    name: str
    ms: float | None


class ScopeView(View):
    """What a scoped question was limited to."""

    chunks: int = Field(description="how many chunks the question could be answered from")
    documents: list[str] = Field(description="the documents asked for by id (their IRIs)")
    pattern: str | None = Field(description="the SPARQL group pattern that picked documents")


class TraceRecord(View):
    """`GET /api/v1/traces/{id}`: one answer's trace, read back from its graph."""

    id: str
    iri: str
    question: str | None
    mode: str | None
    answer: str | None
    model: str | None
    scorer: str | None
    started: str | None
    ended: str | None
    duration_ms: float | None
    input_tokens: int
    output_tokens: int
    explored_edges: int | None
    concepts: list[str]
    seeds: list[SeedView]
    pagerank_seeds: list[PageRankSeedView]
    edges: list[EdgeView]
    sources: list[SourceView]
    steps: list[Step]
    labels: dict[str, str] = Field(description="each IRI the trace names, by its label")
    scope: ScopeView | None = Field(None, description="what the question was limited to; null: the whole collection")
    asked_as: str | None = Field(
        None, description="a conversation's follow-up in the user's own words (question: as asked)"
    )
    turn: int | None = Field(None, description="the follow-up's place in its conversation (0: the first message)")
    carried: list[str] = Field([], description="terms of earlier turns carried into a follow-up's search (offline)")


class SearchHit(PassageView):
    """A passage found by a search (no answer, no trace)."""

    rank: int = Field(description="1 is the best match by the mode's ranking")
    similarity: float | None = Field(
        description="the cosine of the query's and the passage's embeddings, from -1 to 1, comparable across queries"
    )
