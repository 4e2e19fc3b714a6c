"""Asking a collection: Graph RAG and Document RAG answers (whole or as events), a passage
search, and the traces answers leave. Each takes a checked Collection and a request model
(operations/requests.py) and returns a view (retrieval/views.py): every surface renders those.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from sparqlrag.operations.collection import Collection
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.follow_ups import standalone
from sparqlrag.operations.requests import (
    ChatMessage,
    ConversationFields,
    DocumentRagRequest,
    GraphRagRequest,
    ScopeFields,
    SearchRequest,
    TracesQuery,
)
from sparqlrag.operations.scopes import beside_embedding, scope_of
from sparqlrag.retrieval import trace as traces
from sparqlrag.retrieval.question import EmptyGraph
from sparqlrag.retrieval.scope import Scope
from sparqlrag.retrieval.trace import FollowUp
from sparqlrag.retrieval.trace_json import read_trace
from sparqlrag.retrieval.views import (
    DocumentRagAnswer,
    GraphRagAnswer,
    PassageView,
    SearchHit,
    SourceView,
    TraceRecord,
)
from sparqlrag.threads import off_loop

__all__ = ["DocumentRagAnswer", "GraphRagAnswer", "PassageView", "SearchHit", "SourceView", "TraceRecord"]

Events = AsyncIterator[tuple[str, dict[str, Any]]]
"""An answer as it is made: (event, data) pairs, "done" last (streams.py sends them as SSE)."""

TRACE_ID = re.compile(r"[0-9a-f]{32}")  # what Trace mints (uuid4 hex); anything else cannot name one


async def _answerable(collection: Collection, asked: GraphRagRequest) -> None:
    """The walk's own mode needs entities to start from: EmptyGraph (409) before any work."""
    vectors = collection.services.vectors
    if asked.mode == "graph" and not await off_loop(vectors.count, collection.name, "entities"):
        raise EmptyGraph(f"collection {collection.name!r} has no entities to answer from: ingest documents first")


async def ask_graph(collection: Collection, asked: GraphRagRequest, scope: Scope | None = None) -> GraphRagAnswer:
    """`scope`: one made already (a SPARQL service's), else the one the request names."""
    await _answerable(collection, asked)
    question, follow_up = await _standalone(collection, asked.question, asked)
    scope = scope or await _scope(collection, asked, question)
    rag = collection.services.graph_rag
    found = await rag.answer(collection.iris, question, asked.options, asked.mode, scope=scope, follow_up=follow_up)
    return found.view()


async def stream_graph(collection: Collection, asked: GraphRagRequest) -> Events:
    """Checked before the first event, so a refusal is an answer's status, not a broken stream."""
    await _answerable(collection, asked)
    question, follow_up = await _standalone(collection, asked.question, asked)
    scope = await _scope(collection, asked, question)
    rag = collection.services.graph_rag
    return rag.stream(collection.iris, question, asked.options, asked.mode, scope=scope, follow_up=follow_up)


async def _scope(collection: Collection, asked: ScopeFields, question: str) -> Scope | None:
    if asked.documents is None and asked.scope is None:
        return None
    return await beside_embedding(
        collection, question, scope_of(collection, documents=asked.documents, pattern=asked.scope)
    )


async def ask_documents(collection: Collection, asked: DocumentRagRequest) -> DocumentRagAnswer:
    question, follow_up = await _standalone(collection, asked.question, asked)
    scope = await _scope(collection, asked, question)
    rag = collection.services.document_rag
    return (await rag.answer(collection.iris, question, asked.options, scope=scope, follow_up=follow_up)).view()


async def stream_documents(collection: Collection, asked: DocumentRagRequest) -> Events:
    """The scope is made before the first event, so a refusal is an answer's status."""
    question, follow_up = await _standalone(collection, asked.question, asked)
    scope = await _scope(collection, asked, question)
    rag = collection.services.document_rag
    return rag.stream(collection.iris, question, asked.options, scope=scope, follow_up=follow_up)


async def _standalone(collection: Collection, question: str, asked: ConversationFields) -> tuple[str, FollowUp | None]:
    """The question, made to stand alone when it follows a conversation (operations/follow_ups.py)."""
    if not asked.conversation:
        return question, None
    return await standalone(collection, [*asked.conversation, ChatMessage(role="user", content=question)])


async def search(collection: Collection, asked: SearchRequest) -> list[SearchHit]:
    """The passages Document RAG would answer from, each with its rank and cosine similarity."""
    rag, options = collection.services.document_rag, asked.options
    passages = await rag.retrieve(
        collection.iris, asked.query, options, scope=await _scope(collection, asked, asked.query)
    )
    similar = await rag.similarities(collection.iris, asked.query, [p.chunk for p in passages])
    return [
        SearchHit(**PassageView.of(p).as_json(), rank=rank, similarity=similar.get(p.chunk))
        for rank, p in enumerate(passages, start=1)
    ]


async def list_traces(collection: Collection, asked: TracesQuery) -> list[dict[str, Any]]:
    """The latest traces, newest first."""
    return await off_loop(traces.list_traces, collection.services.store, collection.iris, asked.limit)


async def trace(collection: Collection, trace_id: str) -> TraceRecord:
    """One trace read back from its graph; 404 for an id no trace has."""
    found = None
    if TRACE_ID.fullmatch(trace_id):
        found = await off_loop(read_trace, collection.services.store, collection.iris, trace_id)
    if found is None:
        raise _missing(trace_id)
    return found


async def check_trace(collection: Collection, trace_id: str) -> None:
    """404 unless the collection holds the trace (cheaper than reading it)."""
    store, iris = collection.services.store, collection.iris
    if not TRACE_ID.fullmatch(trace_id) or not await off_loop(traces.trace_exists, store, iris, trace_id):
        raise _missing(trace_id)


def _missing(trace_id: str) -> Refused:
    return Refused(404, "trace_not_found", f"no trace {trace_id!r} in this collection")
