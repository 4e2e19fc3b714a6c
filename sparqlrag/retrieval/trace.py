"""The explainability trace: one PROV-O activity per answered question, in the trace graph.

Graph RAG adds its own steps (concepts, seeds, edges) to the same record; Document RAG
records the question, the retrieval mode, every passage used with its rank and score, the
answer, the model and token counts, and the time taken.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from pyoxigraph import BlankNode, Literal, NamedNode, Quad

from sparqlrag.store import vocab as v
from sparqlrag.store.vocab import Iris

XSD_DOUBLE = NamedNode(v.XSD + "double")
XSD_DATETIME = NamedNode(v.XSD + "dateTime")


@dataclass(frozen=True)
class TracedSource:
    chunk: str
    rank: int
    score: float


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
            Quad(node, v.SR_DURATION, Literal(str((ended - self.started).total_seconds() * 1000), datatype=XSD_DOUBLE), graph),
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
                Quad(item, v.SR_SCORE, Literal(str(source.score), datatype=XSD_DOUBLE), graph),
            ]
        return quads
