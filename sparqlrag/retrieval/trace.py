"""The explainability trace: one PROV-O activity per answered question, in the trace graph.

Graph RAG adds its own steps (concepts, seeds, edges) to the same record; Document RAG
records the question, the retrieval mode, every passage used with its rank and score, the
answer, the model and token counts, and the time taken.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyoxigraph import BlankNode, Literal, NamedNode, Quad, Triple

from sparqlrag.store import vocab as v
from sparqlrag.store.vocab import Iris

XSD_DOUBLE = NamedNode(v.XSD + "double")
XSD_DATETIME = NamedNode(v.XSD + "dateTime")


@dataclass(frozen=True)
class TracedSource:
    chunk: str
    rank: int
    score: float


@dataclass(frozen=True)
class TracedSeed:
    entity: str
    score: float
    concept: str


@dataclass(frozen=True)
class TracedEdge:
    fact: Triple
    statement: str | None  # the reifier, when the fact has provenance
    score: float
    hop: int
    concept: str
    reasoning: str | None = None


def _double(value: float) -> Literal:
    return Literal(repr(float(value)), datatype=XSD_DOUBLE)


@dataclass
class Trace:
    question: str
    mode: str
    started: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
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
    steps: dict[str, float] = field(default_factory=dict)  # stage -> milliseconds, in order

    def quads(self, iris: Iris, ended: datetime | None = None) -> list[Quad]:
        ended = ended or datetime.now(timezone.utc)
        node, graph = iris.trace(self.id), iris.trace_graph
        quads = [
            Quad(node, v.RDF_TYPE, v.SR_TRACE, graph),
            Quad(node, v.SR_QUESTION, Literal(self.question), graph),
            Quad(node, v.SR_MODE, Literal(self.mode), graph),
            Quad(node, v.SR_ANSWER, Literal(self.answer), graph),
            Quad(node, v.PROV_STARTED, Literal(self.started.isoformat(), datatype=XSD_DATETIME), graph),
            Quad(node, v.PROV_ENDED, Literal(ended.isoformat(), datatype=XSD_DATETIME), graph),
            Quad(node, v.SR_DURATION, _double((ended - self.started).total_seconds() * 1000), graph),
            Quad(node, v.SR_INPUT_TOKENS, Literal(self.input_tokens), graph),
            Quad(node, v.SR_OUTPUT_TOKENS, Literal(self.output_tokens), graph),
        ]
        if self.model:
            quads.append(Quad(node, v.SR_MODEL, Literal(self.model), graph))
        for source in self.sources:
            item = BlankNode()
            chunk = NamedNode(source.chunk)
            quads += [
                Quad(node, v.PROV_USED, chunk, graph),
                Quad(node, v.SR_SOURCE, item, graph),
                Quad(item, v.RDF_TYPE, v.SR_SOURCE_CLASS, graph),
                Quad(item, v.SR_CHUNK_OF_SOURCE, chunk, graph),
                Quad(item, v.SR_RANK, Literal(source.rank), graph),
                Quad(item, v.SR_SCORE, _double(source.score), graph),
            ]
        return quads + self._graph_quads(node, graph)

    def _graph_quads(self, node: NamedNode, graph: NamedNode) -> list[Quad]:
        """Graph RAG's steps: concepts, seeds, explored and selected edges, stage timings."""
        quads = [Quad(node, v.SR_CONCEPT, Literal(concept), graph) for concept in self.concepts]
        if self.explored is not None:
            quads.append(Quad(node, v.SR_EXPLORED, Literal(self.explored), graph))
        for seed in self.seeds:
            item = BlankNode()
            quads += [
                Quad(node, v.SR_SEED, item, graph), Quad(item, v.RDF_TYPE, v.SR_SEED_CLASS, graph),
                Quad(item, v.SR_ENTITY, NamedNode(seed.entity), graph), Quad(item, v.SR_SCORE, _double(seed.score), graph),
                Quad(item, v.SR_CONCEPT, Literal(seed.concept), graph),
            ]  # fmt: skip
        for edge in self.edges:
            item = BlankNode()
            quads += [
                Quad(node, v.SR_SELECTED_EDGE, item, graph), Quad(item, v.RDF_TYPE, v.SR_SELECTED_EDGE_CLASS, graph),
                Quad(item, v.SR_FACT, edge.fact, graph), Quad(item, v.SR_SCORE, _double(edge.score), graph),
                Quad(item, v.SR_HOP, Literal(edge.hop), graph), Quad(item, v.SR_CONCEPT, Literal(edge.concept), graph),
            ]  # fmt: skip
            if edge.statement:
                statement = NamedNode(edge.statement)
                quads += [Quad(item, v.SR_STATEMENT_OF_EDGE, statement, graph), Quad(node, v.PROV_USED, statement, graph)]
            if edge.reasoning:
                quads.append(Quad(item, v.SR_REASONING, Literal(edge.reasoning), graph))
        for index, (stage, ms) in enumerate(self.steps.items()):
            item = BlankNode()
            quads += [
                Quad(node, v.SR_STEP, item, graph), Quad(item, v.RDF_TYPE, v.SR_STEP_CLASS, graph),
                Quad(item, v.RDFS_LABEL, Literal(stage), graph), Quad(item, v.SR_INDEX, Literal(index), graph),
                Quad(item, v.SR_DURATION, _double(ms), graph),
            ]  # fmt: skip
        return quads
