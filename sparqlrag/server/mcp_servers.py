"""The MCP face: the services the HTTP API offers, as tools and resources an assistant (Claude
Desktop, Claude Code, an IDE agent) calls over the Model Context Protocol.

One module for both transports: streamable HTTP at `/mcp` on the running server (server/app.py),
and stdio (`sparqlrag mcp`). A caller's Access (operations/access.py) is asked of `caller` on every
call: over HTTP, the bearer token of that very request. Two MCP servers are built, one without
the write tool and one with it, so the tool to add a document exists only for a token that may
write. Every failure reaches the client as an MCP tool error with the same message the HTTP API
would give (server/errors.py `described`), never a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import asdict
from importlib.resources import files
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from pydantic import BaseModel, TypeAdapter, WithJsonSchema
from pyoxigraph import RdfFormat

from sparqlrag import __version__
from sparqlrag.operations import answers, collections, documents, explore, linked_data
from sparqlrag.operations import ontologies as ontologies_
from sparqlrag.operations.access import Access, Scope, remote_refusal
from sparqlrag.operations.answers import PassageView, SearchHit
from sparqlrag.operations.collection import Collection, open_collection
from sparqlrag.operations.deadline import Deadline
from sparqlrag.operations.failures import Refused, described, unexpected
from sparqlrag.operations.linked_data import Description, Statement
from sparqlrag.operations.requests import (
    DEFAULT_GRAPH_MODE,
    GRAPH_MODES,
    DocumentRagOptions,
    DocumentRagRequest,
    GraphMode,
    GraphQuery,
    GraphRagOptions,
    GraphRagRequest,
    Question,
    SearchRequest,
    validated,
)
from sparqlrag.operations.scopes import caller_dataset
from sparqlrag.operations.sparql_services import SERVICE_PATHS, calls_in, with_services, without
from sparqlrag.services import Services
from sparqlrag.store.sparql_text import UPDATE_OPERATIONS, leading_keyword
from sparqlrag.store.vocab import DEFAULT_COLLECTION, CollectionName
from sparqlrag.threads import off_loop

log = logging.getLogger("sparqlrag.mcp")

MAX_ROWS = 200  # rows (or triples) a SPARQL tool call returns; the rest is counted, not sent
RESULTS = "application/sparql-results+json, application/n-triples"
VOCABULARY = "sparqlrag://vocabulary/sr.ttl"
INSTRUCTIONS = (
    "sparqlrag holds documents as an RDF knowledge graph with provenance. Ask questions with `ask` "
    "(each answer cites its sources and links an explanation trace), find passages with "
    "`search_documents`, look up what the graph says about a thing with `describe_entity` (and its "
    "neighbourhood, as the graph explorer draws it, with `explore_entity`), and run "
    "read-only SPARQL with `sparql_query`. Collections separate teams' data; `list_collections` "
    "shows the ones this token reaches."
)


def shown(model: type[BaseModel], field: str) -> WithJsonSchema:
    """A tool parameter's JSON Schema: the model field's, limits and names included. The SDK
    would refuse a value outside it with a message that repeats the value, so the tool checks
    it with the model itself (`validated`) and answers in the HTTP API's words."""
    return WithJsonSchema(model.model_json_schema()["properties"][field])


QUESTION = WithJsonSchema(TypeAdapter(Question).json_schema())
CollectionParam = Annotated[
    str, WithJsonSchema(TypeAdapter(CollectionName).json_schema() | {"default": DEFAULT_COLLECTION})
]
# Graph RAG's modes, Document RAG as "document", and "default": the default mode, whichever it is
GRAPH_MODE_NAMED: dict[str, GraphMode] = {**{mode: mode for mode in GRAPH_MODES}, "default": DEFAULT_GRAPH_MODE}
ASK_MODES = (*GRAPH_MODES, "document", "default")
ASK_MODE = WithJsonSchema({"enum": list(ASK_MODES), "type": "string", "default": DEFAULT_GRAPH_MODE})
ASK_OPTIONS = WithJsonSchema(
    {
        "anyOf": [GraphRagOptions.model_json_schema(), DocumentRagOptions.model_json_schema(), {"type": "null"}],
        "default": None,
        "description": "the route's options: /api/v1/graph-rag's for a graph mode, /api/v1/document-rag's for document",
    }
)
READ_TOOLS = (
    "ask",
    "search_documents",
    "sparql_query",
    "describe_entity",
    "explore_entity",
    "list_collections",
    "list_documents",
)
WRITE_TOOLS = ("add_document",)  # only on the server for tokens that may write
P = ParamSpec("P")
T = TypeVar("T")


def _tool(function: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
    """A tool's failures as MCP tool errors, in the words the HTTP API uses (a fixed message,
    with the details logged, for anything unexpected)."""

    @functools.wraps(function)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await function(*args, **kwargs)
        except ToolError:
            raise
        except Exception as error:
            status, code, detail = described(error)
            if unexpected(error, status):
                log.error("MCP tool %s failed", function.__name__, exc_info=error)
            raise ToolError(f"{code}: {detail}") from None

    return wrapped


class McpServers:
    """The MCP servers over one process's services.

    `services` gives the services once the process has opened them; `caller` says what the
    current call may do (raising ToolError when it may do nothing); `before_answer` is asked
    before each question is answered (the HTTP server's rate limit), and a SPARQL query runs
    inside `admitted` (the HTTP server's per-client query limits)."""

    def __init__(
        self,
        base_iri: str,
        services: Callable[[], Services],
        caller: Callable[[Context], Access],
        before_answer: Callable[[Context], None] = lambda context: None,
        admitted: Callable[[Context], AbstractAsyncContextManager[None]] = lambda context: nullcontext(),
    ) -> None:
        self.base_iri, self.services, self.caller, self.before_answer = base_iri, services, caller, before_answer
        self.admitted = admitted
        self.reader = self._server(writes=False)
        self.writer = self._server(writes=True)

    async def _opened(self, context: Context, name: str, scope: Scope = "read") -> Collection:
        """The collection `name`, checked as the HTTP API checks it: its name, the token's reach, existence."""
        return await open_collection(self.services(), name, self.caller(context), scope)

    # -- the tools: each a method, registered on the servers by name (READ_TOOLS, WRITE_TOOLS) --

    async def ask(
        self,
        question: Annotated[str, QUESTION],
        context: Context,
        collection: CollectionParam = DEFAULT_COLLECTION,
        mode: Annotated[str, ASK_MODE] = DEFAULT_GRAPH_MODE,
        options: Annotated[Any, ASK_OPTIONS] = None,  # (checked by the options' model, not the SDK: see `shown`)
        documents: Annotated[Any, shown(DocumentRagRequest, "documents")] = None,
        scope: Annotated[Any, shown(DocumentRagRequest, "scope")] = None,
    ) -> dict[str, Any]:
        """Answer a question from a collection, citing the passages used and the knowledge
        graph's facts. The mode ranks the passages: "evidence" (the default) as Document RAG's
        hybrid search does, then adds bridge passages the graph reached (each with the facts that
        brought it); "pagerank" by personalized PageRank over the graph; "hybrid" by dense and
        keyword search lifted by the facts; "graph" by dense search lifted by the facts;
        "document" answers from passages alone. ("default" means the default mode; it meant
        "pagerank" before.) `options` are the HTTP API's: those of /api/v1/graph-rag (k, bridges,
        the walk's limits...) for a graph mode, of /api/v1/document-rag (k, mode, rerank, mmr,
        weights) for "document". `documents` (ids) and `scope` (a SPARQL group pattern binding
        ?document) limit the answer to those documents. The answer's `trace` IRI opens the
        explanation."""
        if mode not in ASK_MODES:
            raise ToolError(f"bad_request: mode must be one of {', '.join(ASK_MODES)}")
        chosen = validated(
            DocumentRagOptions if mode == "document" else GraphRagOptions, {} if options is None else options
        )
        given = {"question": question, **chosen.model_dump(exclude_unset=True)}  # (options, and no other field)
        given |= {name: value for name, value in (("documents", documents), ("scope", scope)) if value is not None}
        if mode == "document":
            documents = validated(DocumentRagRequest, given)
            opened = await self._opened(context, collection)
            self.before_answer(context)
            found = await answers.ask_documents(opened, documents)
            return {"answer": found.answer, "sources": [_source(p) for p in found.sources], "trace": found.trace}
        asked = validated(GraphRagRequest, given | {"mode": GRAPH_MODE_NAMED[mode]})
        opened = await self._opened(context, collection)
        self.before_answer(context)
        graph = await answers.ask_graph(opened, asked)
        return {
            "answer": graph.answer,
            "facts": [edge.text for edge in graph.edges],
            "sources": [
                _source(p) | ({"bridged_by": [f.text for f in p.bridged_by]} if p.bridge else {}) for p in graph.sources
            ],
            "trace": graph.trace,
        }

    async def search_documents(
        self,
        query: Annotated[str, QUESTION],
        context: Context,
        collection: CollectionParam = DEFAULT_COLLECTION,
        k: Annotated[int, shown(SearchRequest, "k")] = SearchRequest.model_fields["k"].default,
        mode: Annotated[str, shown(SearchRequest, "mode")] = SearchRequest.model_fields["mode"].default,
        documents: Annotated[Any, shown(SearchRequest, "documents")] = None,
        scope: Annotated[Any, shown(SearchRequest, "scope")] = None,
    ) -> dict[str, Any]:
        """The k passages of a collection that best match the query, with their
        documents; nothing is answered or traced. Each passage has `rank` (1 is the best
        match by the mode's ranking) and `similarity`: the cosine similarity of the query's
        and the passage's embeddings, from -1 to 1 (1: the same meaning, near 0: unrelated),
        comparable across queries and modes. `score` is the ranking's own figure (hybrid:
        reciprocal-rank fusion of the vector and keyword rankings; vector: the similarity;
        keyword: BM25): only its order means something. `documents` (ids) and `scope` (a
        SPARQL group pattern binding ?document) limit the search to those documents: the k best
        of theirs."""
        given = {"query": query, "k": k, "mode": mode, "documents": documents, "scope": scope}
        asked = validated(SearchRequest, {name: value for name, value in given.items() if value is not None})
        hits = await answers.search(await self._opened(context, collection), asked)
        return {"passages": [_hit(hit) for hit in hits]}

    async def sparql_query(self, query: str, context: Context) -> dict[str, Any]:
        """Run a read-only SPARQL 1.1 query (SELECT, ASK, CONSTRUCT, DESCRIBE; updates are
        refused) with the server's time limit; at most 200 rows or triples come back. Under
        the server's base IRI, entities are `id/COLLECTION/...`; a collection's facts are in
        the graph `graph/COLLECTION` and their sources in `graph/COLLECTION/source`. Retrieval
        runs inside a query as at /sparql: `SERVICE sr:documentRag { ?hit sr:question "..." ;
        sr:chunk ?chunk ; sr:rank ?rank }` searches, `SERVICE sr:graphRag { ?a sr:question
        "..." ; sr:answer ?answer ; sr:source ?source }` answers (sr: is
        https://w3id.org/sparqlrag/ns#)."""
        return await self._query(context, query)

    async def describe_entity(
        self, entity: str, context: Context, collection: CollectionParam = DEFAULT_COLLECTION
    ) -> dict[str, Any]:
        """What the knowledge graph says about an entity, named by its IRI or its name
        ("Marie Curie"): its labels, types, aliases and facts, each fact with its sources."""
        name = linked_data.entity_collection(self.services(), entity, collection)
        found = await linked_data.entity(await self._opened(context, name), entity)
        return {
            "iri": found.iri,
            "label": found.label,
            "definition": found.definition,
            "types": [found.labels.get(t, t) for t in found.types],
            "aliases": found.aliases,
            "facts": [_fact(found, statement) for statement in (*found.outgoing, *found.incoming)],
            "page": self.base_iri + "page/" + found.iri.removeprefix(self.base_iri),
        }

    async def explore_entity(
        self,
        entity: Annotated[Any, shown(GraphQuery, "entity")],
        context: Context,
        collection: CollectionParam = DEFAULT_COLLECTION,
        depth: Annotated[Any, shown(GraphQuery, "depth")] = GraphQuery.model_fields["depth"].default,
        limit: Annotated[Any, shown(GraphQuery, "limit")] = GraphQuery.model_fields["limit"].default,
    ) -> dict[str, Any]:
        """An entity's neighbourhood, as the graph explorer (/explore) draws it: the things within
        `depth` hops (label, types, degree: how many facts it takes part in; a hub, with more than
        50, is not gone through) and the facts between them (each with its reifier and how many
        chunks state it), at most `limit` things, best-attested facts first (`truncated`: there
        is more), and the documents that state the entity's facts. `entity` is an IRI, such as
        describe_entity's `iri`."""
        asked = validated(GraphQuery, {"entity": entity, "depth": depth, "limit": limit})
        opened = await self._opened(context, collection)
        async with self.admitted(context):
            return asdict(await explore.graph(opened, asked))

    async def list_collections(self, context: Context) -> dict[str, Any]:
        """The collections this token may read, with their counts of documents, chunks and facts."""
        listed = await collections.listed(self.services(), self.caller(context))
        return {"collections": [vars(info) for info in listed]}

    async def list_documents(
        self, context: Context, collection: CollectionParam = DEFAULT_COLLECTION
    ) -> dict[str, Any]:
        """The documents of a collection: id, title, status, chunks, facts, and the original file."""
        rows = await documents.documents(await self._opened(context, collection))
        return {"documents": [documents.document_json(row) for row in rows]}

    async def add_document(
        self,
        text: str,
        document_id: str,
        context: Context,
        collection: CollectionParam = DEFAULT_COLLECTION,
        title: str | None = None,
    ) -> dict[str, Any]:
        """Add a text document to a collection (or replace the one with this id): it is
        chunked, its facts extracted and indexed before this returns."""
        opened = await self._opened(context, collection, "write")
        source = documents.Source(document_id, text.encode("utf-8"), "text/plain", None, title)
        (result,) = await documents.ingest(opened, [source])
        if isinstance(result, Exception):
            raise result
        return vars(result)

    def _server(self, *, writes: bool) -> MCPServer:
        server: MCPServer = MCPServer("sparqlrag", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
        for tool in (*READ_TOOLS, *(WRITE_TOOLS if writes else ())):
            server.add_tool(_tool(getattr(self, tool)))

        @server.resource(VOCABULARY, name="sr vocabulary", mime_type="text/turtle")
        def vocabulary() -> str:
            """The sr: vocabulary (classes and properties of documents, facts and traces) in Turtle."""
            return files("sparqlrag.store").joinpath("vocab.ttl").read_text(encoding="utf-8")

        @server.resource("sparqlrag://ontologies", name="ontologies", mime_type="application/json")
        async def ontologies() -> str:
            """The loaded ontologies: name, IRI, and how many classes and properties each has."""
            listed = await ontologies_.listed(self.services().ontologies)
            return json.dumps({"ontologies": [info.json() for info in listed]})

        @server.resource("sparqlrag://ontologies/{name}", name="ontology", mime_type="text/turtle")
        async def ontology(name: str) -> str:
            """One loaded ontology in Turtle."""
            try:
                return (await ontologies_.serialized(self.services().ontologies, name, RdfFormat.TURTLE)).decode(
                    "utf-8"
                )
            except Refused as error:
                raise ResourceError(error.detail) from None

        return server

    async def _query(self, context: Context, query: str) -> dict[str, Any]:
        access, services = self.caller(context), self.services()
        settings = services.settings
        if len(query.encode("utf-8")) > settings.max_sparql_bytes:
            raise ToolError(
                f"query_too_large: the query is larger than {settings.max_sparql_bytes} bytes (max_sparql_bytes)"
            )
        if (keyword := leading_keyword(query)) in UPDATE_OPERATIONS:
            raise ToolError(f"update_not_allowed: updates are not allowed here ({keyword}); sparql_query only reads")
        ours = {f"{self.base_iri}sparql/{path}": service for service, path in SERVICE_PATHS.items()}
        calls = calls_in(query, ours)  # sr:documentRag and sr:graphRag (or their endpoints), evaluated as at /sparql
        if access.limited and (refused := remote_refusal(without(query, calls))):  # (any other SERVICE)
            raise ToolError(f"forbidden: {refused}")
        dataset = await caller_dataset(services, access)  # (a limited token's: its collections' graphs alone)
        deadline = Deadline(settings.query_timeout)
        async with self.admitted(context):
            if calls:
                query = await with_services(
                    services,
                    query,
                    calls,
                    access,
                    dataset=dataset,
                    deadline=deadline,
                    before_answer=lambda: self.before_answer(context),
                )
            result = await off_loop(
                services.store.query,
                query,
                accept=RESULTS,
                base_iri=self.base_iri,
                timeout=deadline.left(),
                max_bytes=settings.max_result_bytes,
                default_graphs=dataset.default_graphs,
                named_graphs=dataset.named_graphs,
                union_default_graph=dataset.union_default_graph,
            )
        body = result.body.decode("utf-8")
        if result.media_type.startswith("application/n-triples"):
            triples = body.splitlines()
            return {"triples": triples[:MAX_ROWS], "total": len(triples)}
        answer = json.loads(body)
        if "boolean" in answer:
            return {"boolean": answer["boolean"]}
        rows = [{name: value["value"] for name, value in row.items()} for row in answer["results"]["bindings"]]
        return {"variables": answer["head"]["vars"], "rows": rows[:MAX_ROWS], "total": len(rows)}


def _fact(description: Description, statement: Statement) -> dict[str, Any]:
    """A described fact in words, with the sentences and documents it was read from."""
    fact = statement.fact
    return {
        "fact": " ".join(description.name_of(term) for term in (fact.subject, fact.predicate, fact.object)),
        "sources": [
            {"document": e.passage.title, "chunk": e.passage.chunk, "sentence": e.sentence} for e in statement.evidence
        ],
    }


def _source(passage: PassageView) -> dict[str, Any]:
    """A cited passage as an assistant needs it: its document, citation (with the page), chunk IRI,
    original file, text and the other documents holding copies of it (no scores)."""
    keys = ("document", "title", "citation", "pages", "headings", "chunk", "file", "text", "copies")
    return {key: value for key, value in passage.as_json().items() if key in keys and value not in (None, [])}


def _hit(hit: SearchHit) -> dict[str, Any]:
    """A passage found, best first: its rank and similarity (rounded), then the passage."""
    found = hit.as_json()
    similarity = None if hit.similarity is None else round(hit.similarity, 4)
    return {"rank": hit.rank, "similarity": similarity} | {k: v for k, v in found.items() if v not in (None, [])}
