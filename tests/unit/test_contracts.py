"""Each limit and mode name has one source, the models of retrieval/options.py and
operations/requests.py: the OpenAPI document, the MCP tools' schemas and the CLI's choices are read
from them (the routes validate with them: tests/test_http_errors.py), and no module spells a
mode list of its own."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from sparqlrag.cli.parser import build_parser
from sparqlrag.operations.requests import DocumentRagRequest, GraphRagRequest, refusal, said
from sparqlrag.retrieval.options import (
    DEFAULT_GRAPH_MODE,
    DOCUMENT_MODES,
    GRAPH_MODES,
    MAX_PASSAGES,
    DocumentRagOptions,
    GraphRagOptions,
)
from sparqlrag.server.mcp_servers import McpServers
from sparqlrag.server.routes import DOCUMENT
from sparqlrag.store.vocab import CollectionName

ROOT = Path(__file__).resolve().parents[2] / "sparqlrag"
OWNERS = {ROOT / "retrieval" / "options.py"}  # where the mode names are written


def _bounds(model: type[BaseModel], field: str) -> tuple[Any, Any]:
    """A field's lowest and highest value, read from the model's own constraints."""
    lowest = highest = None
    for rule in model.model_fields[field].metadata:
        lowest = getattr(rule, "ge", lowest)
        highest = getattr(rule, "le", highest)
    return lowest, highest


def _body_schema(path: str) -> dict[str, Any]:
    reference = DOCUMENT["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema: dict[str, Any] = DOCUMENT["components"]["schemas"][reference.rsplit("/", 1)[1]]
    return schema


def _tool_schemas() -> dict[str, dict[str, Any]]:
    servers = McpServers("http://tools.example/", lambda: pytest.fail("no service is needed"), lambda context: None)  # type: ignore[arg-type,return-value]
    return {tool.name: tool.input_schema["properties"] for tool in asyncio.run(servers.writer.list_tools())}


@pytest.mark.parametrize("name", GraphRagOptions.names())
def test_every_walk_option_in_the_openapi_document_is_the_models(name: str) -> None:
    shown = _body_schema("/api/v1/graph-rag")["properties"][name]
    field = GraphRagOptions.model_fields[name]
    assert shown["default"] == field.default
    lowest, highest = _bounds(GraphRagOptions, name)
    assert (shown.get("minimum"), shown.get("maximum")) == (lowest, highest)


def test_the_passage_limit_and_the_modes_are_the_same_on_http_mcp_and_the_cli() -> None:
    assert _bounds(DocumentRagOptions, "k") == _bounds(GraphRagOptions, "k") == (1, MAX_PASSAGES)
    tools = _tool_schemas()
    for shown in (
        _body_schema("/api/v1/document-rag")["properties"]["k"],
        _body_schema("/api/v1/graph-rag")["properties"]["k"],
        tools["search_documents"]["k"],
    ):
        assert (shown["minimum"], shown["maximum"], shown["default"]) == (1, MAX_PASSAGES, 5)
    assert _body_schema("/api/v1/document-rag")["properties"]["mode"]["enum"] == list(DOCUMENT_MODES)
    assert tools["search_documents"]["mode"]["enum"] == list(DOCUMENT_MODES)
    assert _body_schema("/api/v1/graph-rag")["properties"]["mode"]["enum"] == list(GRAPH_MODES)
    assert tools["ask"]["mode"]["enum"] == [*GRAPH_MODES, "document", "default"]
    ask = next(a for a in build_parser()._subparsers._group_actions[0].choices["ask"]._actions if a.dest == "mode")  # type: ignore[union-attr, index]
    assert list(ask.choices) == [*GRAPH_MODES, "document"]
    pattern = TypeAdapter(CollectionName).json_schema()["pattern"]
    assert _body_schema("/api/v1/graph-rag")["properties"]["collection"]["anyOf"][0]["pattern"] == pattern
    for tool in ("ask", "search_documents", "describe_entity", "list_documents", "add_document"):
        assert tools[tool]["collection"]["pattern"] == pattern


def test_no_module_but_the_options_spells_a_list_of_mode_names() -> None:
    """A tuple, list, set or Literal holding two or more of one set's mode names is a second
    source: it would go on taking a mode the models dropped."""
    mode_sets: list[set[str]] = [set(GRAPH_MODES), set(DOCUMENT_MODES)]
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        if path in OWNERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            items: list[ast.expr] = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal":
                items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            words = {
                str(item.value) for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str)
            }
            if any(len(words & modes) >= 2 for modes in mode_sets):
                found.append(f"{path.relative_to(ROOT.parent)}:{getattr(node, 'lineno', '?')}")
    assert found == []


def test_a_refusal_names_the_field_and_its_rule_and_never_the_value() -> None:
    secret = "s3cr3t-value"
    with pytest.raises(ValidationError) as raised:
        DocumentRagRequest.model_validate({"question": "q", "k": secret, "mode": secret, secret: 1})
    refused = refusal(raised.value, DocumentRagRequest)
    assert (refused.status, refused.error) == (400, "bad_request")
    assert f"k must be an integer from 1 to {MAX_PASSAGES}" in refused.detail
    assert "mode must be one of " + ", ".join(DOCUMENT_MODES) in refused.detail
    assert refused.detail.count(secret) == 1  # the unknown field's name, never a value
    with pytest.raises(ValidationError) as raised:
        GraphRagRequest.model_validate({"question": "why " * 600})
    assert refusal(raised.value, GraphRagRequest).error == "question_too_long"
    with pytest.raises(ValidationError) as raised:
        GraphRagRequest.model_validate({"question": "q", "collection": "Not A Name"})
    assert refusal(raised.value, GraphRagRequest).error == "bad_collection"
    with pytest.raises(ValidationError) as raised:
        GraphRagOptions(fact_seeds=-1)
    assert said(raised.value, GraphRagOptions) == "fact_seeds must be an integer from 0 to 100"


OPTION_NAMES = set(GraphRagOptions.model_fields) | set(DocumentRagOptions.model_fields)
MODE_NAMES = {*GRAPH_MODES, *DOCUMENT_MODES}


def _restated_defaults(path: Path) -> list[str]:
    """Where a module gives an option a default of its own: a parameter or a class field named
    like an option with a constant default, an argparse option `--NAME` with a constant default,
    or a schema's "default" that is a mode's name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [*node.args.args, *node.args.kwonlyargs]
            defaults = [*[None] * (len(node.args.args) - len(node.args.defaults)), *node.args.defaults]
            defaults += node.args.kw_defaults
            for argument, default in zip(arguments, defaults, strict=True):
                if argument.arg in OPTION_NAMES and isinstance(default, ast.Constant) and default.value is not None:
                    found.append(f"{node.name}({argument.arg}={default.value!r})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            names = {
                a.value.lstrip("-").replace("-", "_")
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            }
            for keyword in node.keywords:
                if keyword.arg == "default" and names & OPTION_NAMES and isinstance(keyword.value, ast.Constant):
                    found.append(f"--{names.pop()}={keyword.value.value!r}")
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in OPTION_NAMES:
            if isinstance(node.value, ast.Constant) and node.value.value is not None:
                found.append(f"{node.target.id}: ... = {node.value.value!r}")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                named = isinstance(key, ast.Constant) and key.value == "default"
                if named and isinstance(value, ast.Constant) and value.value in MODE_NAMES:
                    found.append(f'{{"default": {value.value!r}}}')
    return [f"{path.name}: {what}" for what in found]


def test_each_default_is_written_once() -> None:
    """The models hold every option's default (and the default mode's name): a surface that
    wrote its own would go on using it after the model's changed."""
    found = [
        f"{path.parent.name}/{where}"
        for path in sorted(ROOT.rglob("*.py"))
        if path not in OWNERS
        for where in _restated_defaults(path)
    ]
    assert found == []


def test_the_check_sees_a_restated_default(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        f"def ask(q, k=5, *, mode={DEFAULT_GRAPH_MODE!r}): ...\nparser.add_argument('--bridges', default=2)\n"
        f"class Walk:\n    mode: str = 'graph'\nSCHEMA = {{'default': {DEFAULT_GRAPH_MODE!r}}}\n"
    )
    assert sorted(line.split(": ", 1)[1] for line in _restated_defaults(module)) == sorted(
        [
            "ask(k=5)",
            f"ask(mode={DEFAULT_GRAPH_MODE!r})",
            "--bridges=2",
            "mode: ... = 'graph'",
            f'{{"default": {DEFAULT_GRAPH_MODE!r}}}',
        ]
    )
