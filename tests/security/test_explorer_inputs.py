"""The explorer's inputs (issue 56) as a hostile client sends them: IRIs that try to close the
query's term and call a SERVICE at the probe's listener, IRIs with control characters, names where
IRIs belong, oversized values, unknown documents. Each is a 4xx naming the parameter, reaches
nothing, and leaves the store as it was: the routes put values into SPARQL only as checked terms."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, Listener, snapshot, still_serving


@pytest.fixture(scope="module")
def cern(hostile: LiveServer) -> str:
    """An entity the routes know, from a document the probe's writer adds."""
    with hostile.client(WRITE) as client:
        made = client.post("/api/v1/documents", json={"id": "cern", "text": "CERN is located near Geneva."})
        assert made.status_code in (200, 201), made.text
    return f"{hostile.settings.base_iri}id/default/cern"


def injections(listener: Listener) -> list[str]:
    """Values that would call the listener if they reached a query as text."""
    service = f"SERVICE <{listener.url('sparql')}> {{ ?a ?b ?c }}"
    return [
        f"http://x/> ?p ?o }} {service} {{ <http://x/",
        f"http://x/>{service}",
        f"http://x/>SERVICE<{listener.url('sparql')}>{{?a?b?c}}",  # no space: past the pattern, to the IRI parser
        f"{listener.url('sparql')}> . {service} #",
        "http://x/\x1b\x03t",
        "urn:x:" + "a" * 5000,
    ]


def test_the_graph_route_refuses_what_is_no_iri_and_reaches_nothing(
    hostile: LiveServer, listener: Listener, cern: str
) -> None:
    before = snapshot(hostile)
    with hostile.client(READ) as client:
        for value in injections(listener):
            for params in ({"entity": value}, {"entity": cern, "relation": value}):
                answered = client.get(f"/api/v1/collections/default/graph?{urlencode(params)}")
                named = "relation" if "relation" in params else "entity"
                assert answered.status_code in (400, 404), (params, answered.text)
                if answered.status_code == 400:
                    assert answered.json()["detail"].startswith(named), answered.text
            document = client.get(f"/api/v1/collections/default/graph?{urlencode({'entity': cern, 'document': value})}")
            assert document.status_code in (200, 400), document.text  # an id: quoted into an IRI, or too long
            if document.status_code == 200:
                assert document.json()["edges"] == []  # no document by that id states anything
        deep = client.get(f"/api/v1/collections/default/graph?{urlencode({'entity': cern, 'depth': 10**9})}")
        assert deep.status_code == 400 and deep.json()["detail"].startswith("depth")
    assert listener.contacts == []
    assert snapshot(hostile) == before
    still_serving(hostile)


def test_the_fact_and_search_routes_refuse_hostile_values_and_reach_nothing(
    hostile: LiveServer, listener: Listener, cern: str
) -> None:
    before = snapshot(hostile)
    near = f"{hostile.settings.base_iri}rel/is-located-near"
    geneva = f"{hostile.settings.base_iri}id/default/geneva"
    stated = {"subject": cern, "predicate": near, "object": geneva}
    with hostile.client(READ) as client:
        held = client.get(f"/api/v1/collections/default/graph/fact?{urlencode(stated)}")
        assert held.json()["evidence"], "the fact is there: the refusals below are for the values alone"
        for value in injections(listener):
            for part in ("subject", "predicate", "object"):
                fact = stated | {part: value}
                answered = client.get(f"/api/v1/collections/default/graph/fact?{urlencode(fact)}")
                assert answered.status_code in (400, 404), (fact, answered.text)
                if answered.status_code == 400:
                    assert answered.json()["detail"].startswith(part), answered.text
            found = client.get(f"/api/v1/collections/default/entities?{urlencode({'search': value})}")
            assert found.status_code in (200, 400), found.text  # words to embed, or past 500 characters
        for search in ("", " \t", "x" * 501):
            refused = client.get(f"/api/v1/collections/default/entities?{urlencode({'search': search})}")
            assert refused.status_code == 400 and refused.json()["detail"].startswith("search"), refused.text
    assert listener.contacts == []
    assert snapshot(hostile) == before
    still_serving(hostile)
