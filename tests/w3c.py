"""Reads the W3C SPARQL 1.1 Protocol / Graph Store Protocol manifests into runnable cases.

Each case is an ordered list of HTTP requests with expected responses (see the comments at
the top of the manifests). Paths starting with /sparql/ and /gsp are rewritten to this
server's /sparql and /store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pyoxigraph
from rdflib import RDFS, Graph, Namespace, URIRef
from rdflib.collection import Collection
from rdflib.compare import isomorphic
from rdflib.term import Node

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
HT = Namespace("http://www.w3.org/2011/http#")
HTS = Namespace("http://www.w3.org/2011/http-statusCodes#")
CNT = Namespace("http://www.w3.org/2011/content#")
UT = Namespace("http://www.w3.org/2009/sparql/tests/test-update#")

STATUS = {"OK": [200], "Created": [201], "NoContent": [204], "NotFound": [404]}
STATUS.update({f"StatusCode{n}xx": list(range(n * 100, n * 100 + 100)) for n in (2, 3, 4, 5)})
RESULT_TYPES: dict[str, tuple[str, ...]] = {
    "boolean": ("application/sparql-results+json", "application/sparql-results+xml")
}
RESULT_TYPES["tabular"] = RESULT_TYPES["boolean"] + ("text/csv", "text/tab-separated-values")
RESULT_TYPES["RDF"] = ("application/rdf+xml", "text/turtle", "application/n-triples")


@dataclass
class Expected:
    statuses: list[int]
    format: str | None = None
    boolean: bool | None = None
    content_type: str | None = None
    body: str | None = None
    location_variable: str | None = None


@dataclass
class Step:
    method: str
    path: str
    headers: dict[str, str]
    body: str | None
    expected: Expected


@dataclass
class Case:
    name: str
    title: str
    steps: list[Step]
    graph_data: list[tuple[Path, str]] = field(default_factory=list)


def _items(graph: Graph, head: Node) -> list:
    return list(Collection(graph, head))


def _headers(graph: Graph, node: Node) -> dict[str, str]:
    headers = {}
    for header_list in graph.objects(node, HT.headers):
        for header in _items(graph, header_list):
            name = str(graph.value(header, HT.fieldName)).lower()
            headers[name] = str(graph.value(header, HT.fieldValue))
    return headers


def _body(graph: Graph, node: Node) -> str | None:
    body = graph.value(node, HT.body)
    return None if body is None else str(graph.value(body, CNT.chars))


def _rewrite(path: str) -> str:
    if path.startswith("/sparql/"):
        return "/sparql" + path[len("/sparql/") :]
    if path.startswith("/gsp"):
        return "/store" + path[len("/gsp") :]
    raise ValueError(f"unexpected test path {path}")


def _step(graph: Graph, request: Node) -> Step:
    response = graph.value(request, HT.resp)
    assert response is not None, f"a test request with no response: {request}"
    statuses = [
        code for status in graph.objects(response, MF.expectedStatus) for code in STATUS[str(status).split("#")[1]]
    ]
    boolean = graph.value(response, MF.expectedBoolean)
    fmt = graph.value(response, MF.expectedFormat)
    location = graph.value(response, MF.expectedLocation)
    response_headers = _headers(graph, response)
    return Step(
        method=str(graph.value(request, HT.methodName)),
        path=_rewrite(str(graph.value(request, HT.absolutePath))),
        headers=_headers(graph, request),
        body=_body(graph, request),
        expected=Expected(
            statuses=statuses,
            format=None if fmt is None else str(fmt),
            boolean=None if boolean is None else str(boolean) == "true",
            content_type=response_headers.get("content-type"),
            body=_body(graph, response),
            location_variable=None if location is None else str(location),
        ),
    )


def load_cases(manifest: Path) -> list[Case]:
    """The cases of a manifest, following mf:include, in manifest order."""
    graph = Graph().parse(manifest, format="turtle", publicID=manifest.as_uri())
    root = URIRef(manifest.as_uri())
    cases: list[Case] = []
    for include in graph.objects(root, MF.include):
        for included in _items(graph, include):
            cases += load_cases(Path(str(included).removeprefix("file://")))
    for entries in graph.objects(root, MF.entries):
        for entry in _items(graph, entries):
            action = graph.value(entry, MF.action)
            steps = (
                []
                if action is None
                else [_step(graph, r) for head in graph.objects(action, HT.requests) for r in _items(graph, head)]
            )
            data = [
                (Path(str(graph.value(d, UT.graph)).removeprefix("file://")), str(graph.value(d, RDFS.label)))
                for d in graph.objects(entry, UT.graphData)
            ]
            cases.append(Case(str(entry).split("#")[-1], str(graph.value(entry, MF.name)), steps, data))
    return cases


def _media_type(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def check_step(step: Step, response: httpx.Response) -> None:
    """Assert that `response` is what the manifest expects."""
    expected = step.expected
    context = f"{step.method} {step.path} -> {response.status_code} {response.text[:300]!r}"
    assert response.status_code in expected.statuses, context
    if expected.format is not None:
        media_type = _media_type(response.headers.get("content-type"))
        assert media_type in RESULT_TYPES[expected.format], f"{media_type} is not a {expected.format} type; {context}"
    if expected.boolean is not None:
        media_type = _media_type(response.headers.get("content-type"))
        results_format = pyoxigraph.QueryResultsFormat.from_media_type(media_type)
        assert results_format is not None, context
        parsed = pyoxigraph.parse_query_results(response.content, format=results_format)
        assert isinstance(parsed, pyoxigraph.QueryBoolean), context
        assert bool(parsed) is expected.boolean, context
    if expected.content_type is not None:
        assert _media_type(response.headers.get("content-type")) == _media_type(expected.content_type), context
    if expected.body is not None and step.method != "HEAD":
        rdf_format = _media_type(expected.content_type) or "text/turtle"
        want = Graph().parse(data=expected.body, format=rdf_format)
        got = Graph().parse(data=response.text, format=_media_type(response.headers.get("content-type")))
        assert isomorphic(want, got), f"graphs differ:\nexpected\n{want.serialize()}\ngot\n{got.serialize()}"
    if expected.location_variable is not None:
        assert response.headers.get("location"), context


def run_case(case: Case, client: httpx.Client) -> None:
    for data_file, graph_iri in case.graph_data:
        response = client.put(
            "/store",
            params={"graph": graph_iri},
            content=data_file.read_bytes(),
            headers={"Content-Type": "application/n-triples"},
        )
        assert response.status_code in (201, 204), response.text
    variables: dict[str, str] = {}
    for step in case.steps:
        path, body = step.path, step.body
        for name, value in variables.items():
            path = path.replace(name, value)
            body = body.replace(name, value) if body is not None else None
        response = client.request(
            step.method, path, headers=step.headers, content=None if body is None else body.encode("utf-8")
        )
        check_step(step, response)
        if step.expected.location_variable is not None:
            variables[step.expected.location_variable] = response.headers["location"]
