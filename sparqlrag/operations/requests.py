"""What each use case takes: one pydantic model per request, the source of its checks, its
defaults and its JSON Schema (the OpenAPI document's request bodies, the MCP tools' parameters,
the CLI's choices). A request that fails its model is Refused with a 400 that names each field
and what it must be, never the value sent.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from sparqlrag.extraction.decoders import kinds as document_kinds
from sparqlrag.ontology.formats import FORMAT_NAMES as ONTOLOGY_FORMAT_NAMES
from sparqlrag.operations.refused import Refused
from sparqlrag.queries.neighbourhood import DEFAULT_LIMIT, MAX_DEPTH, MAX_LIMIT
from sparqlrag.retrieval.options import (
    DEFAULT_GRAPH_MODE,
    GRAPH_MODES,
    DocumentRagOptions,
    Flag,
    GraphMode,
    GraphRagOptions,
    Question,
)
from sparqlrag.retrieval.question import QuestionTooLong
from sparqlrag.store.vocab import CollectionName, OntologyName

__all__ = [
    "DEFAULT_GRAPH_MODE",
    "GRAPH_MODES",
    "ONTOLOGY_FORMAT_NAMES",
    "document_kinds",
    "DocumentRagOptions",
    "GraphMode",
    "GraphRagOptions",
    "Question",
]

M = TypeVar("M", bound=BaseModel)
Stream = Annotated[Flag, Field(description="answer as server-sent events")]
CollectionField = Annotated[
    CollectionName | None, Field(description="the collection (else ?collection=, else default)")
]
NameOrIri = Annotated[
    str,
    Strict(),
    Field(min_length=1, pattern=r"\S", description="an entity IRI, or a name only one thing of the collection has"),
]


MAX_TURNS = 64
MAX_CONVERSATION_CHARS = 32_000


class ChatPart(BaseModel):
    """A part of a message's content: text alone is read (an image, audio or file part is not)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    type: Literal["text"] = Field(description="text: the only part a question is read from")
    text: Annotated[str, Strict()]


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")  # (name, and what else a client adds)

    role: Literal["system", "developer", "user", "assistant"]
    content: Annotated[str, Strict()] | list[ChatPart] | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(part.text for part in self.content)
        return self.content or ""


class ChatRequest(BaseModel):
    """`POST /v1/chat/completions`, the OpenAI wire format: the model is a collection. Fields a
    chat front end sends that do not apply here (temperature, top_p, max_tokens, stop, user,
    seed...) are accepted and ignored; n above 1 and a tool the client requires are refused."""

    model_config = ConfigDict(frozen=True, extra="allow")

    model: Annotated[str, Strict()] = Field(description="a collection's name (GET /v1/models)")
    messages: list[ChatMessage] = Field(min_length=1, description="the conversation; the last is the user's question")
    stream: Flag = False
    n: Annotated[int, Strict()] = Field(1, ge=1, le=1, description="one answer (more are refused)")
    tool_choice: Any = Field(None, description='"none" or "auto": a tool the client requires is refused')

    @model_validator(mode="after")
    def _answerable(self) -> ChatRequest:
        if self.messages[-1].role != "user":
            raise ValueError("the last message must be the user's question")
        check_conversation(self.messages)
        if self.tool_choice not in (None, "none", "auto"):
            raise ValueError("tools are not supported: no tool can be required (tool_choice)")
        return self


class OllamaMessage(ChatMessage):
    images: list[Any] | None = Field(None, description="images are not read: a message that has some is refused")

    @model_validator(mode="after")
    def _text_alone(self) -> OllamaMessage:
        if self.images:
            raise ValueError("images are not read: send the question as text")
        return self


class OllamaChat(BaseModel):
    """Ollama's `POST /api/chat`: a chat completion's fields in Ollama's names (it streams unless
    told not to); options and the like are accepted and ignored."""

    model_config = ConfigDict(frozen=True, extra="allow")

    model: Annotated[str, Strict()]
    messages: list[OllamaMessage] = Field(min_length=1)
    stream: Flag = True


class ConversationTooLong(ValueError):
    """A conversation past MAX_TURNS messages or MAX_CONVERSATION_CHARS characters (413)."""


def check_conversation(messages: list[ChatMessage]) -> None:
    """ConversationTooLong past the bounds every surface keeps."""
    if len(messages) > MAX_TURNS:
        raise ConversationTooLong(f"the conversation has {len(messages)} messages; the limit is {MAX_TURNS}")
    if (size := sum(len(m.text) for m in messages)) > MAX_CONVERSATION_CHARS:
        raise ConversationTooLong(f"the conversation is {size} characters; the limit is {MAX_CONVERSATION_CHARS}")


class ConversationFields(BaseModel):
    """A question asked after others: the earlier turns make it stand alone (operations/follow_ups.py)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    conversation: list[ChatMessage] | None = Field(
        None,
        description="the earlier turns, oldest first ({role: user or assistant, content}); the question follows them",
    )

    @model_validator(mode="after")
    def _bounded(self) -> ConversationFields:
        if self.conversation:
            check_conversation([*self.conversation, ChatMessage(role="user", content="")])
        return self


MAX_SCOPE_DOCUMENTS = 1000
MAX_SCOPE_CHARS = 10_000
DocumentId = Annotated[str, Strict(), Field(min_length=1, max_length=1000)]


class ScopeFields(BaseModel):
    """What a question may be limited to: named documents, or those a SPARQL pattern picks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    documents: list[DocumentId] | None = Field(
        None, min_length=1, max_length=MAX_SCOPE_DOCUMENTS, description="answer from these documents alone (their ids)"
    )
    scope: Annotated[str, Strict()] | None = Field(
        None,
        min_length=1,
        max_length=MAX_SCOPE_CHARS,
        description="answer from the documents this SPARQL group pattern binds to ?document alone, evaluated as your "
        'query at /sparql would be, e.g. `?document dcterms:title "Annual report"` (the prefixes sr, prov, '
        "dcterms, rdf, rdfs, skos, owl, xsd and bibo are declared); with documents, from those both pick",
    )


class GraphRagRequest(GraphRagOptions, ScopeFields, ConversationFields):
    """`POST /api/v1/graph-rag`: the question and, for this answer, any of the walk's options."""

    question: Question
    collection: CollectionField = None
    mode: GraphMode = Field(
        DEFAULT_GRAPH_MODE,
        description="evidence: Document RAG's hybrid passages, then bridge passages the graph reached; pagerank: "
        "passages by personalized PageRank over the graph index; hybrid: the walk's ranking with the keyword "
        "ranking fused in; graph: the walk's",
    )
    stream: Stream = False

    @property
    def options(self) -> GraphRagOptions:
        return _options(self, GraphRagOptions)


class DocumentRagRequest(DocumentRagOptions, ScopeFields, ConversationFields):
    """`POST /api/v1/document-rag`: the question and how to find its passages."""

    question: Question
    collection: CollectionField = None
    stream: Stream = False

    @property
    def options(self) -> DocumentRagOptions:
        return _options(self, DocumentRagOptions)


class SearchRequest(DocumentRagOptions, ScopeFields):
    """MCP `search_documents`: the passages a query finds, with no answer and no trace."""

    query: Question
    collection: CollectionField = None

    @property
    def options(self) -> DocumentRagOptions:
        return _options(self, DocumentRagOptions)


def _options(request: BaseModel, kind: type[M]) -> M:
    """The options a request holds, without what only the request has (question, collection...)."""
    return kind(**{name: getattr(request, name) for name in kind.model_fields})


class Body(BaseModel):
    """A request body: unknown fields are refused, not ignored (a misspelt option is a mistake)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class NewCollection(Body):
    """`POST /api/v1/collections`."""

    FIELD_CODES: ClassVar[dict[str, str]] = {"name": "bad_collection"}

    name: CollectionName
    ontology: OntologyName | None = Field(None, description="extract with this loaded ontology")


class EntityMerge(Body):
    """`POST .../entities/merge`: `other` is `entity` (its IRI becomes an alias, its facts move)."""

    entity: NameOrIri
    other: NameOrIri


class EntitySplit(Body):
    """`POST .../entities/split`: `alias` names something else than `entity`, from now on."""

    entity: NameOrIri
    alias: NameOrIri


class TextDocument(Body):
    """`POST /api/v1/documents` as JSON: one document's text."""

    id: str = Field(min_length=1, description="the document id; the same id replaces the document")
    text: str
    title: str | None = None
    media_type: str = Field("text/plain", description="how to read the text: text/plain, text/markdown, text/html")


class NlQuestion(Body):
    """`POST /api/v1/nl-query`."""

    question: Question
    collection: CollectionField = None
    ontology: OntologyName | None = Field(None, description="the ontology to query with (else the collection's)")


class AliasesQuery(BaseModel):
    """`GET .../entities/aliases`'s query parameters."""

    model_config = ConfigDict(frozen=True)

    entity: NameOrIri


Iri = Annotated[str, Strict(), Field(min_length=1, max_length=4000, pattern=r"^[a-zA-Z][a-zA-Z0-9+.-]*:\S+$")]


class GraphQuery(BaseModel):
    """`GET .../graph`'s query parameters: an entity's neighbourhood, bounded."""

    model_config = ConfigDict(frozen=True)

    entity: Iri = Field(description="the entity's IRI (an alias's stands for the entity it names)")
    depth: int = Field(1, ge=0, le=MAX_DEPTH, description="hops from the entity (0: the entity alone)")
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="the most nodes drawn")
    relation: Iri | None = Field(None, description="only facts with this predicate")
    document: DocumentId | None = Field(None, description="only facts this document states (its id)")


class EntitySearch(BaseModel):
    """`GET .../entities`'s query parameters: entities by name, as a question's grounding finds them."""

    model_config = ConfigDict(frozen=True)

    search: str = Field(min_length=1, max_length=500, pattern=r"\S", description="a name or alias, or words near one")
    limit: int = Field(10, ge=1, le=50, description="the most entities found")


class FactQuery(BaseModel):
    """`GET .../graph/fact`'s query parameters: one fact of the knowledge graph, by its three IRIs."""

    model_config = ConfigDict(frozen=True)

    subject: Iri
    predicate: Iri
    object: Iri


class TracesQuery(BaseModel):
    """`GET /api/v1/traces`'s own query parameters (?collection= is every route's)."""

    model_config = ConfigDict(frozen=True)  # a query string's values are text: "50" is 50

    limit: int = Field(50, ge=1, le=1000, description="how many of the latest traces")


FIELD_CODES = {"collection": "bad_collection", "ontology": "unknown_ontology"}  # the codes these had before


def validated(model: type[M], values: dict[str, Any]) -> M:
    """`values` as `model`, or Refused (400) naming each problem: how the CLI and MCP check what they were given."""
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise refusal(error, model) from None


def refusal(error: ValidationError, model: type[BaseModel]) -> Refused:
    """A ValidationError as the API's 400: `question_too_long` and `bad_collection` keep the
    codes clients know; the detail names each field and what it must be, never the value sent."""
    problems = error.errors(include_url=False, include_input=False)
    for problem in problems:
        if isinstance(cause := problem.get("ctx", {}).get("error"), QuestionTooLong):
            return Refused(400, "question_too_long", str(cause))
        if isinstance(cause, ConversationTooLong):
            return Refused(413, "conversation_too_long", str(cause))
    fields = {p["loc"][0] for p in problems if p["loc"] and p["type"] != "missing"}
    codes = FIELD_CODES | getattr(model, "FIELD_CODES", {})
    code = next((codes[name] for name in codes if name in fields), "bad_request")
    return Refused(400, code, f"{said(error, model)}; send {shape(model)}")


def said(error: ValidationError, model: type[BaseModel]) -> str:
    """What is wrong, in one line: each field and what it must be, by the model's own schema."""
    properties = _properties(model)
    lines = []
    for problem in error.errors(include_url=False, include_input=False)[:5]:
        name = ".".join(str(part)[:64] for part in problem["loc"])
        if problem["type"] == "extra_forbidden":
            lines.append(f"{name} is not one of this request's fields")
        elif problem["type"] == "missing":
            lines.append(f"{name} is required")
        elif problem["type"] != "value_error" and name in properties:
            lines.append(f"{name} must be {expected(properties[name])}")
        else:
            what = str(problem["msg"]).removeprefix("Value error, ")
            lines.append(f"{name}: {what}" if name else what)
    return "; ".join(lines)


@cache
def _properties(model: type[BaseModel]) -> dict[str, Any]:
    properties: dict[str, Any] = model.model_json_schema().get("properties", {})
    return properties


def expected(schema: dict[str, Any]) -> str:
    """A JSON Schema in words: "an integer from 1 to 100", "one of vector, keyword, hybrid"."""
    if "anyOf" in schema:
        return " or ".join(expected(option) for option in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(str(value) for value in schema["enum"])
    kind = {"integer": "an integer", "number": "a number", "boolean": "true or false", "null": "null"}
    words = kind.get(schema.get("type", ""), f"a {schema.get('type', 'value')}")
    if "pattern" in schema:
        words += (
            " with a character that is not a space" if schema["pattern"] == r"\S" else f" matching {schema['pattern']}"
        )
    if "minimum" in schema and "maximum" in schema:
        words += f" from {schema['minimum']} to {schema['maximum']}"
    elif "minimum" in schema:
        words += f" of at least {schema['minimum']}"
    if schema.get("type") == "array" and "minItems" in schema and schema.get("minItems") == schema.get("maxItems"):
        words = f"a list of {schema['minItems']} ({expected(schema.get('items', {}))} each)"
    return words


def shape(model: type[BaseModel]) -> str:
    """The body a model takes, in short: `{"question": ..., "k"?, ...}`."""
    fields = [f'"{name}": ...' if info.is_required() else f"{name}?" for name, info in model.model_fields.items()]
    return "{" + ", ".join(fields) + "}"
