"""Our SPARQL services evaluated inside a client's query: each call (queries/service_calls.py)
checked, its scope made under the caller's grants and dataset, its retrieval run, and its rows
written into the query in place of its block, before the query runs on the store.

A block becomes `{ VALUES (?chunk ?score ...) { ... } SCOPE }`: the rows, joined again with the
scope's patterns, so the variables the scope binds reach the rest of the query as any SERVICE's
would. sr:documentRag is a search (no answer, no trace); sr:graphRag answers, and its trace is
written before the query runs, so the rest of the query can read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError
from pyoxigraph import Literal, NamedNode

from sparqlrag.operations import answers
from sparqlrag.operations.access import Access
from sparqlrag.operations.collection import Collection, open_collection
from sparqlrag.operations.deadline import Deadline
from sparqlrag.operations.failures import Refused
from sparqlrag.operations.requests import GraphRagRequest, SearchRequest, said
from sparqlrag.operations.scopes import Dataset, beside_embedding, scope_of
from sparqlrag.queries.service_calls import (
    OUTPUTS,
    SERVICE_PATHS,
    ServiceCall,
    ServiceCallError,
    as_service_block,
    literal,
    prologue,
    service_calls,
    variable,
    without,
)
from sparqlrag.retrieval.scope import Scope
from sparqlrag.services import Services
from sparqlrag.store.sparql_text import sparql_term, tokens

Row = dict[str, NamedNode | Literal]
CHUNK_OUTPUT = {"documentRag": "chunk", "graphRag": "source"}  # the output that names a passage's chunk


__all__ = ["SERVICE_PATHS", "ServiceCall", "without"]


def calls_in(query: str, endpoints: Mapping[str, str] | None = None) -> list[ServiceCall]:
    """The calls of our services in a query (`endpoints`: our endpoints' URLs, by service);
    400 for a block that cannot be read as one."""
    try:
        return service_calls(query, endpoints)
    except ServiceCallError as error:
        raise Refused(400, "bad_service_call", str(error)) from None


def endpoint_query(query: str, service: str) -> str:
    """A query sent to a service's own endpoint, as the query it means here; 400 when it has no
    pattern to take as the service's block."""
    try:
        return as_service_block(query, service)
    except ServiceCallError as error:
        raise Refused(400, "bad_service_call", str(error)) from None


async def with_services(
    services: Services,
    query: str,
    calls: list[ServiceCall],
    access: Access,
    *,
    dataset: Dataset,
    deadline: Deadline,
    before_answer: Callable[[], None] = lambda: None,
) -> str:
    """The query with each call evaluated and its block replaced by its rows (a call without
    sr:collection asks the default collection); `before_answer` is called before each call
    runs (the answer rate)."""
    declared = prologue(query)
    blocks = []
    for call in calls:
        deadline.left()
        before_answer()
        blocks.append(await _block(services, call, access, declared, dataset, deadline))
    for call, block in reversed(list(zip(calls, blocks))):
        query = query[: call.start] + block + query[call.end :]
    return query


async def _block(
    services: Services,
    call: ServiceCall,
    access: Access,
    declared: str,
    dataset: Dataset,
    deadline: Deadline,
) -> str:
    """The call's rows as a group pattern: VALUES of its outputs, joined with its scope."""
    outputs = _outputs(call)
    inputs = _inputs(call)
    opened = await open_collection(services, inputs.pop("collection", None), access)
    question = _question(call, inputs)
    scope = await beside_embedding(opened, question, _scope(opened, call, outputs, declared, dataset, deadline))
    if call.service == "documentRag":
        rows = await _passages(opened, call, inputs, scope)
    else:
        rows = await _answer(opened, call, inputs, scope)
    names = list(outputs.values())
    wanted = [[row.get(output) for output in outputs] for row in rows]
    values = " ".join("(" + " ".join("UNDEF" if v is None else sparql_term(v) for v in row) + ")" for row in wanted)
    head = " ".join(f"?{name}" for name in names)
    return f"{{ VALUES ({head}) {{ {values} }}\n{call.scope}\n}}" if names else f"{{ {call.scope}\n}}"


def _outputs(call: ServiceCall) -> dict[str, str]:
    """Output property -> the variable it binds, for those the block names."""
    found: dict[str, str] = {}
    for name in OUTPUTS[call.service]:
        if name in call.parameters:
            bound = variable(call.parameters[name])
            if bound is None:
                raise Refused(400, "bad_service_call", f"{call.name}'s sr:{name} takes a variable, not a value")
            if bound in found.values():
                raise Refused(400, "bad_service_call", f"{call.name} binds ?{bound} twice: give each output its own")
            found[name] = bound
    return found


def _inputs(call: ServiceCall) -> dict[str, Any]:
    """sr:question, sr:collection, sr:k and sr:mode as values (each a literal)."""
    found: dict[str, Any] = {}
    for name, kind in (("question", str), ("collection", str), ("k", int), ("mode", str)):
        if name not in call.parameters:
            continue
        try:
            value = literal(call.parameters[name])
        except ServiceCallError:
            value = None
        if not isinstance(value, kind):
            what = "a string literal" if kind is str else "an integer"
            raise Refused(400, "bad_service_call", f"{call.name}'s sr:{name} takes {what}")
        found[name] = value
    return found


async def _scope(
    opened: Collection,
    call: ServiceCall,
    outputs: dict[str, str],
    declared: str,
    dataset: Dataset,
    deadline: Deadline,
) -> Scope | None:
    """What the block's other patterns pick: the chunks they bind to the sr:chunk (sr:source)
    variable, else the documents they bind to sr:document's."""
    if not call.scope.strip(" \t\r\n."):
        return None
    mentioned = {t.text[1:] for t in tokens(call.scope) if t.kind == "var"}
    chunk, document = outputs.get(CHUNK_OUTPUT[call.service]), outputs.get("document")
    if chunk is None and document is None or not mentioned & {chunk, document}:
        raise Refused(
            400,
            "bad_service_call",
            f"{call.name}'s other patterns are its scope: they must use the variable of "
            f"sr:{CHUNK_OUTPUT[call.service]} or sr:document, to pick what it may return",
        )
    binds_chunks = chunk in mentioned
    return await scope_of(
        opened,
        pattern=call.scope,
        binds=chunk if binds_chunks and chunk else document or "",
        chunks=binds_chunks,
        prologue=declared,
        dataset=dataset,
        deadline=deadline,
    )


def _checked(model: type[BaseModel], call: ServiceCall, values: dict[str, Any]) -> Any:
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise Refused(400, "bad_service_call", f"{call.name}: {said(error, model)}") from None


def _question(call: ServiceCall, inputs: dict[str, Any]) -> str:
    if "question" not in inputs:
        raise Refused(400, "bad_service_call", f"{call.name} needs sr:question, a literal")
    return str(inputs["question"])


async def _passages(opened: Collection, call: ServiceCall, inputs: dict[str, Any], scope: Scope | None) -> list[Row]:
    given = {"query": _question(call, inputs)} | {name: inputs[name] for name in ("k", "mode") if name in inputs}
    asked: SearchRequest = _checked(SearchRequest, call, given)
    rag = opened.services.document_rag
    passages = await rag.retrieve(opened.iris, asked.query, asked.options, scope=scope)
    return [
        {
            "chunk": NamedNode(p.chunk),
            "score": Literal(p.score),
            "rank": Literal(rank),
            "document": NamedNode(p.document),
            "text": Literal(p.text),
        }
        for rank, p in enumerate(passages, start=1)
    ]


async def _answer(opened: Collection, call: ServiceCall, inputs: dict[str, Any], scope: Scope | None) -> list[Row]:
    asked: GraphRagRequest = _checked(GraphRagRequest, call, {**inputs, "question": _question(call, inputs)})
    found = await answers.ask_graph(opened, asked, scope)
    head: Row = {"answer": Literal(found.answer), "trace": NamedNode(found.trace)}
    rows = []
    for rank, source in enumerate(found.sources, start=1):
        row = head | {"source": NamedNode(source.chunk), "rank": Literal(rank), "score": Literal(source.score)}
        if source.document is not None:
            row["document"] = NamedNode(source.document)
        rows.append(row)
    return rows or [head]
