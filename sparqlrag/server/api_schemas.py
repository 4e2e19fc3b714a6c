"""The pieces the OpenAPI document (openapi.py) is written with: operations, parameters and
the schemas of the bodies the API sends and takes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode

from sparqlrag.store.formats import DATASET_FORMATS, TRIPLE_FORMATS
from sparqlrag.store.vocab import DEFAULT_COLLECTION, CollectionName, OntologyName

JSON = "application/json"
COMPONENT = "#/components/schemas/{model}"
ERROR = {"$ref": COMPONENT.format(model="Error")}


class _Schema(GenerateJsonSchema):
    """JSON Schema as pydantic writes it, without a title on every property (the name says it)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def components(*models: type[Any], schema: JsonSchemaMode = "validation") -> dict[str, Any]:
    """Each model's (a pydantic model's or a dataclass's) JSON Schema as an OpenAPI component,
    with the models it refers to: as a request takes it ("validation"), or as a response gives
    it ("serialization": every field)."""
    found: dict[str, Any] = {}
    for model in models:
        written = TypeAdapter(model).json_schema(ref_template=COMPONENT, schema_generator=_Schema, mode=schema)
        found |= written.pop("$defs", {})
        found[model.__name__] = written
    return found


def query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    """A model of query parameters as OpenAPI parameters, each field's schema its own."""
    schema = model.model_json_schema(schema_generator=_Schema)
    return [
        {
            "name": name,
            "in": "query",
            "required": name in schema.get("required", []),
            "schema": {key: value for key, value in shown.items() if key != "description"},
            "description": shown.get("description", ""),
        }
        for name, shown in schema["properties"].items()
    ]


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """A request body of `model`'s JSON (its component, which `components` wrote)."""
    return {JSON: {"schema": {"$ref": COMPONENT.format(model=model.__name__)}}}


def reference(model: type[Any]) -> dict[str, str]:
    """A schema that is a model's component (`components`)."""
    return {"$ref": COMPONENT.format(model=model.__name__)}


def json_response(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def json_object(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


STRING, INTEGER, NUMBER, BOOLEAN = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
ANY_OBJECT = {"type": "object"}
OPENAI_ERROR = json_response(
    {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "object", "required": ["message", "type", "code"]}},
    },
    'refused, in OpenAI\'s shape: {"error": {"message", "type", "code"}}',
)
OLLAMA_ERROR = json_response(json_object(["error"], error=STRING), 'refused, in Ollama\'s shape: {"error": message}')
REACH = {"oneOf": [{"const": "all"}, {"type": "array", "items": STRING}]}  # a token's collections
NAME = TypeAdapter(CollectionName).json_schema()
ONTOLOGY_NAME = TypeAdapter(OntologyName).json_schema()
TEXT = {"type": "string", "minLength": 1}
UPDATE = {"type": "string", "description": "a SPARQL update; an empty one is valid, and does nothing"}
IRI = {"type": "string", "format": "uri", "description": "an absolute IRI"}
COLLECTION_QUERY = {
    "name": "collection",
    "in": "query",
    "schema": {**NAME, "default": DEFAULT_COLLECTION},
    "description": "the collection",
}


def operation(
    summary: str,
    *,
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
    parameters: list[dict[str, Any]] | None = None,
    refused: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One operation; every one can also answer with a 4xx, the API's JSON error unless `refused`
    says otherwise. The scope a token needs for it is the route table's (routes.py), which the
    document states (openapi.document)."""
    described: dict[str, Any] = {
        "summary": summary,
        "responses": {
            **responses,
            "4XX": refused or json_response(ERROR, "the request was refused; the body says why"),
        },
    }
    if body is not None:
        described["requestBody"] = {"required": True, "content": body}
    if parameters:
        described["parameters"] = parameters
    return described


def path_parameter(name: str, description: str, schema: dict[str, Any] = STRING) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema, "description": description}


TRACE_ID = path_parameter("id", "the trace id")


def graph_store_doc(what: str, *, dataset: bool) -> dict[str, Any]:
    """The Graph Store Protocol's four methods on one kind of path, by method; `dataset`: the path is
    `/store`, which also names the default graph (?default), a graph (?graph=) or every graph."""
    responses = {
        "200": {"description": "RDF by Accept"},
        "201": {"description": "created"},
        "204": {"description": "done"},
    }
    reification = {
        "name": "reification",
        "in": "query",
        "schema": {"enum": ["rdf12", "rdf11"], "default": "rdf12"},
        "description": "rdf11: each fact reifier as RDF 1.1 reification, for tools without triple terms",
    }
    naming: list[dict[str, Any]] = [
        {"name": "graph", "in": "query", "schema": IRI, "description": "the graph (else: the whole dataset)"},
        {
            "name": "default",
            "in": "query",
            "schema": STRING,
            "allowEmptyValue": True,
            "description": "present (any value, usually none): the default graph",
        },
    ]
    uploads = TRIPLE_FORMATS + (DATASET_FORMATS if dataset else [])  # quads only for the whole dataset
    rdf = {media: {"schema": STRING} for media, _ in uploads}
    return {
        method: operation(
            f"Graph Store HTTP Protocol {method.upper()} {what}",
            responses=responses,
            body=rdf if method in ("put", "post") else None,
            parameters=([reification] if method == "get" else []) + (naming if dataset else []) or None,
        )
        for method in ("get", "put", "post", "delete")
    }


COLLECTION = json_object(
    ["name", "iri", "documents", "chunks", "facts"],
    name=STRING,
    iri=STRING,
    created={"type": ["string", "null"], "description": "when it was created; null for `default`, which always exists"},
    documents=INTEGER,
    chunks=INTEGER,
    facts=INTEGER,
    ontology={"type": ["string", "null"]},
)
ONTOLOGY = json_object(
    ["name", "iri"],
    name=STRING,
    iri=STRING,
    classes=INTEGER,
    properties=INTEGER,
    triples=INTEGER,
    sha256=STRING,
    loaded=STRING,
)
RDF_SERVED = {  # what RDF is answered as (OWL/XML is read, never written: it would be RDF/XML mislabelled)
    media: {"schema": STRING}
    for media in ("text/turtle", "application/rdf+xml", "application/n-triples", "application/ld+json")
}
RDF_BODY = RDF_SERVED | {"application/owl+xml": {"schema": STRING}}  # what an RDF upload may be
ZIP = {"application/zip": {"schema": {"type": "string", "format": "binary"}}}
SSE = {  # each event as schemathesis and browsers read it: its name and its JSON text
    "text/event-stream": {"schema": json_object(["data"], event=STRING, data=STRING)}
}
QUERY_TIMEOUT = json_response(ERROR, "query_timeout: the query ran past its time limit and was stopped")
