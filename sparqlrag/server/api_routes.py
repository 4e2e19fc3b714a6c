"""The route table's `/api/v1` part (routes.py holds the rest): documents, answers, traces,
collections, entities, ontologies."""

from __future__ import annotations

from typing import Any

from sparqlrag.operations.answers import DocumentRagAnswer, GraphRagAnswer, TraceRecord
from sparqlrag.operations.entities import EntityAliases
from sparqlrag.operations.explore import EntityMatches, FactEvidence, Neighbourhood
from sparqlrag.operations.requests import (
    AliasesQuery,
    ChatRequest,
    DocumentRagRequest,
    EntityMerge,
    EntitySearch,
    EntitySplit,
    FactQuery,
    GraphQuery,
    GraphRagRequest,
    NewCollection,
    NlQuestion,
    OllamaChat,
    TextDocument,
    TracesQuery,
)
from sparqlrag.server import (
    answers,
    chat,
    collections,
    documents,
    entities,
    explore,
    nl_query,
    ontologies,
    token_info,
)
from sparqlrag.server.api_schemas import (
    ANY_OBJECT,
    BOOLEAN,
    COLLECTION,
    COLLECTION_QUERY,
    ERROR,
    INTEGER,
    JSON,
    NAME,
    OLLAMA_ERROR,
    ONTOLOGY,
    ONTOLOGY_NAME,
    OPENAI_ERROR,
    RDF_BODY,
    RDF_SERVED,
    REACH,
    SSE,
    STRING,
    TRACE_ID,
    ZIP,
    json_body,
    json_object,
    json_response,
    operation,
    path_parameter,
    query_parameters,
    reference,
)
from sparqlrag.server.endpoints import Endpoint, Handler

INGESTED = {
    "200": json_response(ANY_OBJECT, "nothing changed: every document was there already as sent"),
    "201": json_response(ANY_OBJECT, "ingested"),
    "202": json_response(ANY_OBJECT, "queued (Prefer: respond-async)"),
}
DOCUMENT_ID = path_parameter("id", "the document id")
COLLECTION_NAME = path_parameter("name", "the collection", NAME)
ONTOLOGY_IN_PATH = path_parameter("name", "the ontology's name", ONTOLOGY_NAME)
ANSWER = "the answer"

CHAT_ROUTES: list[tuple[str, str, Handler, str, dict[str, Any]]] = [  # refusals in OpenAI's or Ollama's shape
    (
        "/v1/models",
        "GET",
        chat.list_models,
        "OpenAI-compatible: the models, one per collection the key may read",
        {"responses": {"200": json_response(ANY_OBJECT)}, "refused": OPENAI_ERROR},
    ),
    (
        "/v1/models/{model}",
        "GET",
        chat.get_model,
        "OpenAI-compatible: one model (a collection)",
        {
            "parameters": [path_parameter("model", "a collection's name")],
            "responses": {"200": json_response(ANY_OBJECT)},
            "refused": OPENAI_ERROR,
        },
    ),
    (
        "/api/tags",
        "GET",
        chat.ollama_tags,
        "Ollama-compatible: the models, one per collection the key may read",
        {"responses": {"200": json_response(ANY_OBJECT)}, "refused": OLLAMA_ERROR},
    ),
    (
        "/api/chat",
        "POST",
        chat.ollama_chat,
        "Ollama-compatible chat, streamed as newline-delimited JSON unless stream is false",
        {"body": json_body(OllamaChat), "responses": {"200": json_response(ANY_OBJECT)}, "refused": OLLAMA_ERROR},
    ),
    (
        "/v1/chat/completions",
        "POST",
        chat.chat_completions,
        "OpenAI-compatible chat: the collection (model) answers the conversation's last question, cited",
        {
            "body": json_body(ChatRequest),
            "responses": {
                "200": {
                    "description": "a chat.completion, or chat.completion.chunk events",
                    "content": {JSON: {"schema": ANY_OBJECT}, **SSE},
                }
            },
            "refused": OPENAI_ERROR,
        },
    ),
]


API: list[Endpoint] = [
    Endpoint(
        "/api/v1/documents",
        "POST",
        documents.upload,
        "write",
        operation(
            "Upload documents (JSON text, multipart files, or a raw body with ?id=); ingested now, or queued with "
            "Prefer: respond-async",
            parameters=[COLLECTION_QUERY],
            body={
                **json_body(TextDocument),
                "multipart/form-data": {"schema": json_object([], file={"type": "string", "format": "binary"})},
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
            },
            responses=INGESTED,
        ),
    ),
    Endpoint(
        "/api/v1/documents",
        "GET",
        documents.list_documents,
        doc=operation(
            "The documents of a collection, with status and progress",
            parameters=[COLLECTION_QUERY],
            responses={
                "200": json_response(json_object(["documents"], documents={"type": "array", "items": ANY_OBJECT}))
            },
        ),
    ),
    Endpoint(
        "/api/v1/documents/{id:path}/reingest",
        "POST",
        documents.reingest,
        "write",
        operation("Extract a kept document again", parameters=[DOCUMENT_ID, COLLECTION_QUERY], responses=INGESTED),
    ),
    Endpoint(
        "/api/v1/documents/{id:path}",
        "GET",
        documents.get_document,
        doc=operation(
            "One document: status, progress, chunks",
            parameters=[DOCUMENT_ID, COLLECTION_QUERY],
            responses={"200": json_response(ANY_OBJECT)},
        ),
    ),
    Endpoint(
        "/api/v1/documents/{id:path}",
        "DELETE",
        documents.delete_document,
        "write",
        operation(
            "Delete a document, its chunks and the facts only it supported",
            parameters=[DOCUMENT_ID, COLLECTION_QUERY],
            responses={"204": {"description": "deleted"}},
        ),
    ),
    Endpoint(
        "/api/v1/document-rag",
        "POST",
        documents.document_rag,
        doc=operation(
            "Document RAG over passages (vector, keyword or hybrid retrieval)",
            body=json_body(DocumentRagRequest),
            responses={
                "200": {"description": ANSWER, "content": {JSON: {"schema": reference(DocumentRagAnswer)}, **SSE}}
            },
        ),
    ),
    Endpoint(
        "/api/v1/graph-rag",
        "POST",
        answers.graph_rag,
        doc=operation(
            "Graph RAG: an answer with the facts used, sources and a trace",
            body=json_body(GraphRagRequest),
            responses={"200": {"description": ANSWER, "content": {JSON: {"schema": reference(GraphRagAnswer)}, **SSE}}},
        ),
    ),
    *(
        Endpoint(path, method, handler, doc=operation(summary, **doc), judges_token=True)
        for path, method, handler, summary, doc in CHAT_ROUTES
    ),
    Endpoint(
        "/api/v1/traces",
        "GET",
        answers.traces,
        doc=operation(
            "The latest answers' traces",
            parameters=[COLLECTION_QUERY, *query_parameters(TracesQuery)],
            responses={"200": json_response(json_object(["traces"], traces={"type": "array", "items": ANY_OBJECT}))},
        ),
    ),
    Endpoint(
        "/api/v1/traces/{id}",
        "GET",
        answers.trace,
        doc=operation(
            "One trace: concepts, seeds, edges, sources, steps",
            parameters=[TRACE_ID, COLLECTION_QUERY],
            responses={"200": json_response(reference(TraceRecord))},
        ),
    ),
    Endpoint(
        "/api/v1/access",
        "GET",
        token_info.access,
        doc=operation(
            "What the request's token may do: the collections it reads and writes (`all`, or their "
            "names); `auth` false on a server without tokens",
            responses={"200": json_response(json_object(["auth"], auth=BOOLEAN, reads=REACH, writes=REACH))},
        ),
    ),
    Endpoint(
        "/api/v1/collections",
        "GET",
        collections.list_collections,
        doc=operation(
            "Collections with their counts",
            responses={
                "200": json_response(json_object(["collections"], collections={"type": "array", "items": COLLECTION}))
            },
        ),
    ),
    Endpoint(
        "/api/v1/collections",
        "POST",
        collections.create_collection,
        "write",
        operation(
            "Create a collection, optionally extracting with a loaded ontology",
            body=json_body(NewCollection),
            responses={"201": json_response(COLLECTION)},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}",
        "GET",
        collections.get_collection,
        doc=operation(
            "One collection with its counts", parameters=[COLLECTION_NAME], responses={"200": json_response(COLLECTION)}
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}",
        "DELETE",
        collections.delete_collection,
        "write",
        operation(
            "Delete a collection: graphs, vectors, keyword rows, documents. `default` always exists: "
            "it is emptied and stays (listed with no documents)",
            parameters=[COLLECTION_NAME],
            responses={
                "200": json_response(
                    json_object(["collection", "emptied", "detail"], collection=NAME, emptied=BOOLEAN, detail=STRING),
                    "`default` emptied; it stays",
                ),
                "204": {"description": "deleted"},
            },
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/core",
        "GET",
        collections.export_core,
        doc=operation(
            "Export the collection as a knowledge core (zip: TriG graphs, vectors, manifest)",
            parameters=[COLLECTION_NAME],
            responses={"200": {"description": "the core", "content": ZIP}},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/core",
        "POST",
        collections.import_core,
        "write",
        operation(
            "Import a knowledge core into this (new or empty) collection, with no extraction; a core exported "
            "from another collection or base IRI has its IRIs moved to this one",
            parameters=[COLLECTION_NAME],
            body=ZIP,
            responses={
                "201": json_response(
                    json_object(
                        ["collection"],
                        collection=STRING,
                        quads=INTEGER,
                        chunks=INTEGER,
                        entities=INTEGER,
                        rebased_from={"type": ["string", "null"]},
                        renamed_from={"type": ["string", "null"]},
                    )
                )
            },
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/graph",
        "GET",
        explore.graph,
        doc=operation(
            "An entity's neighbourhood in the knowledge graph, as the explorer draws it: nodes (label, types, "
            "degree, hub) and edges (the fact's reifier, its evidence count), bounded by depth and limit, within "
            "the query deadline; the entity's documents",
            parameters=[COLLECTION_NAME, *query_parameters(GraphQuery)],
            responses={"200": json_response(reference(Neighbourhood))},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/graph/fact",
        "GET",
        explore.fact,
        doc=operation(
            "One fact of the knowledge graph, named, with each chunk it was extracted from: the evidence "
            "sentence, the document, the page and the original file at that page",
            parameters=[COLLECTION_NAME, *query_parameters(FactQuery)],
            responses={"200": json_response(reference(FactEvidence))},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/entities",
        "GET",
        explore.entities,
        doc=operation(
            "Entities by name or alias, nearest first, as a question's grounding finds them",
            parameters=[COLLECTION_NAME, *query_parameters(EntitySearch)],
            responses={"200": json_response(reference(EntityMatches))},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/entities/aliases",
        "GET",
        entities.aliases,
        doc=operation(
            "An entity's aliases, the merges that joined them (rule, score, evidence documents), the names kept apart",
            parameters=[COLLECTION_NAME, *query_parameters(AliasesQuery)],
            responses={"200": json_response(reference(EntityAliases))},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/entities/merge",
        "POST",
        entities.merge,
        "write",
        operation(
            "A person's merge: `other` is `entity` (its IRI becomes an alias, its facts move)",
            parameters=[COLLECTION_NAME],
            body=json_body(EntityMerge),
            responses={"200": json_response(reference(EntityAliases))},
        ),
    ),
    Endpoint(
        "/api/v1/collections/{name}/entities/split",
        "POST",
        entities.split,
        "write",
        operation(
            "A person's split: `alias` names something else than `entity`, from now on",
            parameters=[COLLECTION_NAME],
            body=json_body(EntitySplit),
            responses={"200": json_response(reference(EntityAliases))},
        ),
    ),
    Endpoint(
        "/api/v1/nl-query",
        "POST",
        nl_query.nl_query,
        per_collection=False,
        doc=operation(
            "A question written as a checked SPARQL query over an ontology, and its results",
            body=json_body(NlQuestion),
            responses={
                "200": json_response(
                    json_object(
                        ["query", "results"], question=STRING, ontology=STRING, query=STRING, form=STRING, results={}
                    )
                ),
                "501": json_response(ERROR, "no LLM is configured to write the query (`llm` setting)"),
            },
        ),
    ),
    Endpoint(
        "/api/v1/ontologies",
        "GET",
        ontologies.list_ontologies,
        doc=operation(
            "Loaded ontologies",
            responses={
                "200": json_response(json_object(["ontologies"], ontologies={"type": "array", "items": ONTOLOGY}))
            },
        ),
    ),
    Endpoint(
        "/api/v1/ontologies",
        "POST",
        ontologies.upload,
        "write",
        operation(
            "Load an ontology (multipart file or raw RDF body; ?name=, ?replace=)",
            body={
                **RDF_BODY,
                "multipart/form-data": {
                    "schema": json_object(["file"], file={"type": "string", "format": "binary"}, name=STRING)
                },
            },
            responses={"201": json_response(ONTOLOGY), "200": json_response(ONTOLOGY, "reloaded or unchanged")},
        ),
        per_collection=False,
    ),
    Endpoint(
        "/api/v1/ontologies/{name}",
        "GET",
        ontologies.get_ontology,
        doc=operation(
            "The ontology as RDF/XML (default), Turtle, N-Triples or JSON-LD by Accept",
            parameters=[ONTOLOGY_IN_PATH],
            responses={"200": {"description": "RDF", "content": RDF_SERVED}},
        ),
    ),
    Endpoint(
        "/api/v1/ontologies/{name}",
        "PUT",
        ontologies.put,
        "write",
        operation(
            "Load or replace the ontology of this name",
            parameters=[ONTOLOGY_IN_PATH],
            body=RDF_BODY,
            responses={"200": json_response(ONTOLOGY), "201": json_response(ONTOLOGY)},
        ),
        per_collection=False,
    ),
    Endpoint(
        "/api/v1/ontologies/{name}",
        "DELETE",
        ontologies.delete_ontology,
        "write",
        operation(
            "Remove the ontology (not while a collection extracts with it)",
            parameters=[ONTOLOGY_IN_PATH],
            responses={"204": {"description": "removed"}},
        ),
        per_collection=False,
    ),
]
