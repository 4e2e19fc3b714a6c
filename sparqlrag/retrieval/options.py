"""What a Graph RAG or Document RAG request may ask for: the modes, the limits and the
defaults, each written once. The HTTP bodies, the MCP tools' schemas, the CLI's checks and the
OpenAPI document are all read from these models, so a limit changed here changes everywhere.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, model_validator

from sparqlrag.retrieval.question import MAX_QUESTION_CHARS, check_question

# How Graph RAG finds its passages. "evidence" (the default): Document RAG's hybrid passages,
# exactly, then up to `bridges` passages PageRank reached through a fact the walk scored and
# hybrid did not show (bench/RESULTS.md, "Issue 52", says why the default ranks as plain hybrid
# does). "pagerank": personalized PageRank over the graph index, seeded by the question's nearest
# facts and the hybrid ranking (pagerank.py). "graph": the walk's own ranking, dense retrieval
# lifted by the walk's facts; "hybrid": that ranking fused with the keyword ranking by reciprocal
# rank. The walk chooses the facts the answer cites in every mode.
GraphMode = Literal["evidence", "pagerank", "graph", "hybrid"]
GRAPH_MODES: tuple[GraphMode, ...] = ("evidence", "pagerank", "graph", "hybrid")
DEFAULT_GRAPH_MODE: GraphMode = "evidence"
DocumentMode = Literal["vector", "keyword", "hybrid"]
DOCUMENT_MODES: tuple[DocumentMode, ...] = ("vector", "keyword", "hybrid")
Scorer = Literal["facts", "text"]

MAX_PASSAGES = 100


def _whole(value: object) -> object:
    """A JSON number with no fraction as an int: JSON has one number type, and JSON Schema's
    "integer" takes 70.0 as it takes 70."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Count = Annotated[int, BeforeValidator(_whole), Strict()]
"""An integer option: no strings, no booleans, no fractions."""
Flag = Annotated[bool, Strict()]
Number = Annotated[float, Strict()]

Passages = Annotated[
    int, Field(ge=1, le=MAX_PASSAGES, strict=True, description="passages returned"), BeforeValidator(_whole)
]
Question = Annotated[
    str,
    Strict(),
    AfterValidator(check_question),
    Field(
        description="the question",
        json_schema_extra={"minLength": 1, "maxLength": MAX_QUESTION_CHARS, "pattern": r"\S"},
    ),
]
"""A question: not blank, at most MAX_QUESTION_CHARS (QuestionTooLong beyond), stripped. The
check is check_question's alone, so a long question is told its length and the limit."""


class Options(BaseModel):
    """Options are immutable, refuse unknown names, and take booleans only as booleans."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class GraphRagOptions(Options):
    """The walk's limits and the passages' ranking; every one can be set per request."""

    entity_limit: Count = Field(50, ge=1, le=500, description="seeds, shared among the question's concepts")
    triple_limit: Count = Field(30, ge=1, le=1000, description="edges fetched per frontier entity and direction")
    max_path_length: Count = Field(2, ge=1, le=5, description="hops")
    edge_limit: Count = Field(25, ge=1, le=500, description="edges kept per hop")
    max_reranker_input: Count = Field(350, ge=1, le=5000, description="candidate edges scored per hop")
    fact_seeds: Count = Field(
        5, ge=0, le=100, description="the question's nearest facts, whose ends seed the walk (HippoRAG 2 links 5)"
    )
    k: Passages = 5
    bridges: Count = Field(
        2,
        ge=0,
        le=10,
        description='"evidence" mode: passages the graph may add after the k it shares with Document RAG',
    )
    reasoning: Flag = Field(False, description="ask the LLM why each kept edge matters")
    scorer: Scorer = Field(
        "facts",
        description='"facts": the fact index\'s vectors (a lookup); "text": each path\'s text, embedded or '
        "cross-encoded now",
    )

    @classmethod
    def names(cls) -> list[str]:
        return list(cls.model_fields)


Weight = Annotated[Number, Field(ge=0)]


class DocumentRagOptions(Options):
    """How Document RAG finds its passages."""

    mode: DocumentMode = Field("hybrid", description="vector, keyword (BM25), or both fused by reciprocal rank")
    k: Passages = 5
    rerank: Flag = Field(False, description="rescore the candidates with the cross-encoder")
    mmr: Number | None = Field(
        None, ge=0, le=1, description="MMR's lambda (1: relevance only, 0: variety only); null: no MMR"
    )
    weights: list[Weight] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="the hybrid fusion's [vector, keyword] weights, not both zero; null: the server's",
        json_schema_extra={"not": {"type": "array", "items": {"maximum": 0}}},
    )

    @model_validator(mode="after")
    def _weighs_something(self) -> DocumentRagOptions:
        if self.weights is not None and sum(self.weights) <= 0:
            raise ValueError("weights are [vector, keyword], not both zero")
        return self

    @property
    def fusion(self) -> tuple[float, float] | None:
        """The weights as `DocumentRag.retrieve` takes them."""
        return (self.weights[0], self.weights[1]) if self.weights else None
