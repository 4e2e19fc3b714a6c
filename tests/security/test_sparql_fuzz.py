"""Grammar-aware fuzzing of remote access: SERVICE and LOAD hidden in every lexical context SPARQL
allows (comments, short and long strings, IRIs with \\u escapes, prefixed names with escapes,
nested groups, odd keyword case and whitespace), the target written in every way an IRI can be
(escaped, relative to BASE, a prefixed name; Oxigraph never binds a SERVICE variable).

Each generated request goes to the server (remote access off): it must reach nothing, and get
403 (200/204 with SILENT). The control runs the same text on a store with remote access on,
where most requests do reach the listener: so the generator produces real remote calls, and
this test would fail if any of them got out.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparqlrag.store import EmbeddedStore
from sparqlrag.store.base import StoreError
from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, Listener, sparql

EXAMPLES = 150


def escaped(text: str, every: int) -> str:
    """Some characters of an IRI written as \\u / \\U escapes (SPARQL decodes them in IRIs)."""
    out = []
    for index, char in enumerate(text):
        if index % every == 1 and char.isalnum():
            out.append(f"\\u{ord(char):04X}" if index % 2 else f"\\U{ord(char):08X}")
        else:
            out.append(char)
    return "".join(out)


def keyword(draw: st.DrawFn, word: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(word), max_size=len(word)))
    return "".join(c.lower() if flip else c for c, flip in zip(word, flips))


SPACE = st.sampled_from([" ", "\t", "\n", "\r\n", "  ", " # SERVICE <http://hidden/> {\n", "\n#LOAD <http://hidden>\n"])
# terms that confuse a lexer: '#' and the keywords inside strings, IRIs and names
DECOY_TERMS = st.sampled_from(
    [
        '"#"',
        "'#'",
        '"SERVICE <http://x/> { }"',
        "'LOAD <http://x>'",
        '"""long\n# SERVICE\n"""',
        "'''a'b\n#'''",
        '"\\"#"',
        '"\\u0023"',
        "<http://a/\\u0041#>",
        "<http://a/\\U00000041#>",
        "<http://a/#frag>",
        "<http://a/b\\u0023c>",
        "ex:a\\#b",
        "ex:a\\.b",
        "ex:%23b",
        "ex:a\\~b",
        "ex:a\\'b",
        "ex:SERVICE",
        "ex:load",
        "?service",
        "1",
        '"x"@en',
    ]
)


@st.composite
def decoy(draw: st.DrawFn, index: int) -> str:
    term = draw(DECOY_TERMS)
    form = draw(st.sampled_from(["bind", "filter", "group", "comment", "optional"]))
    if form == "bind" and not term.startswith("?"):
        return f"BIND({term} AS ?d{index})"
    if form == "filter":
        return f"FILTER(?d{index} != {term if not term.startswith('?') else '1'})"
    if form == "group":
        depth = draw(st.integers(1, 3))
        return "{ " * depth + "} " * depth
    if form == "optional":
        return f"OPTIONAL {{ ?s{index} <http://p> {term} }}"
    return f"# {term} SERVICE <http://x/> {{\n"


@st.composite
def target(draw: st.DrawFn, port: int) -> tuple[str, str]:
    """(prologue, how the target is written): the same loopback URL in many spellings."""
    host = draw(st.sampled_from(["127.0.0.1", "localhost"]))
    path = draw(st.sampled_from(["svc", "a/b", "x#frag", "q?x=1"]))
    url = f"http://{host}:{port}/{path}"
    way = draw(st.sampled_from(["plain", "escaped", "base", "prefixed"]))
    if way == "escaped":
        return "", f"<{escaped(url, draw(st.integers(2, 5)))}>"
    if way == "base":
        return f"BASE <http://{host}:{port}/>\n", f"<{path}>"
    if way == "prefixed" and "#" not in path and "?" not in path:
        return f"PREFIX t: <http://{host}:{port}/>\n", "t:" + path.replace("/", "\\/")
    return "", f"<{url}>"


@st.composite
def operation(draw: st.DrawFn, port: int) -> tuple[str, str, bool]:
    """(kind, text, silent)."""
    prologue, where = draw(target(port))
    silent = draw(st.booleans())
    space = draw(SPACE)
    before = " ".join(draw(decoy(i)) for i in range(draw(st.integers(0, 3))))
    after = " ".join(draw(decoy(i + 10)) for i in range(draw(st.integers(0, 2))))
    prefixes = "PREFIX ex: <http://e/>\n" + prologue
    if draw(st.booleans()):
        opened = draw(st.integers(0, 3))
        service = f"{keyword(draw, 'SERVICE')}{space}{'SILENT ' if silent else ''}{where}{space}{{ ?a ?b ?c }}"
        body = f"{before} {'{ ' * opened}{service}{' }' * opened} {after}"
        return "query", f"{prefixes}SELECT * WHERE {{ {body} }}", silent
    data = draw(DECOY_TERMS.filter(lambda t: not t.startswith("?")))
    load = f"{keyword(draw, 'LOAD')}{space}{'SILENT ' if silent else ''}{where}"
    into = draw(st.sampled_from(["", " INTO GRAPH <http://evil/g>", " into graph ex:g"]))
    return "update", f"{prefixes}INSERT DATA {{ <http://s> <http://p> {data} }} ;{space}{load}{into}", silent


@pytest.fixture(scope="module")
def control(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedStore]:
    store = EmbeddedStore(Path(tmp_path_factory.mktemp("control")) / "store", allow_remote=True)
    yield store
    store.close()


def test_no_way_out(hostile: LiveServer, listener: Listener, control: EmbeddedStore) -> None:
    reached = []

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(op=operation(listener.port))
    def probe(op: tuple[str, str, bool]) -> None:
        kind, text, silent = op
        seen = len(listener.contacts)
        response = sparql(hostile, WRITE if kind == "update" else READ, kind, text)
        assert len(listener.contacts) == seen, f"contacted by {text!r}"
        expected = (200 if kind == "query" else 204) if silent else 403
        assert response.status_code == expected, (text, response.status_code, response.text)
        try:
            control.query(text) if kind == "query" else control.update(text)
        except StoreError:
            pass  # the listener answers 500: the point is whether it was contacted
        reached.append(len(listener.contacts) > seen)

    probe()
    assert len(reached) >= EXAMPLES * 0.9
    assert sum(reached) >= 0.8 * len(reached), (
        f"only {sum(reached)} of {len(reached)} generated requests were real remote calls"
    )
    listener.contacts.clear()
