"""Stored data never becomes script: pages link only http(s) IRIs, escape everything else, and
every response carries a Content-Security-Policy that runs no inline script."""

from __future__ import annotations

import re
from urllib.parse import quote

from tests.conftest import LiveServer
from tests.security.conftest import READ, WRITE, sparql

HOSTILE_IRIS = [
    "javascript:alert(3)",
    "data:text/html,<script>alert(4)</script>",
    "vbscript:msgbox(5)",
    "JaVaScRiPt:alert(6)",
]


def test_hostile_iris_are_shown_not_linked(hostile: LiveServer) -> None:
    base = hostile.settings.base_iri
    entity, relation = f"{base}id/default/evil", f"{base}rel/links-to"
    facts = (
        "\n".join(
            f"<{entity}> <{relation}> <{quote(iri, safe=':/(),')}> . <{quote(iri, safe=':/(),')}> <{relation}> "
            f"<{entity}> ."
            for iri in HOSTILE_IRIS
        )
        + f'\n<{entity}> <{quote(HOSTILE_IRIS[0], safe=":()")}> "via a hostile predicate" .'
    )
    response = sparql(hostile, WRITE, "update", f"INSERT DATA {{ GRAPH <{base}graph/default> {{ {facts} }} }}")
    assert response.status_code == 204, response.text
    with hostile.client(READ) as client:
        pages = [client.get("/page/id/default/evil"), client.get("/page/rel/links-to")]
    for page in pages:
        assert page.status_code == 200, page.text
        hrefs = re.findall(r'href="([^"]*)"', page.text)
        assert hrefs, "the page links something"
        assert not [h for h in hrefs if re.match(r"\s*(javascript|data|vbscript):", h, re.I)], hrefs
        assert "<script>alert" not in page.text  # shown escaped
        assert "javascript:alert(3)" in page.text  # but shown


def test_every_response_has_a_strict_policy(hostile: LiveServer) -> None:
    with hostile.client(READ) as client:
        for path in ["/", "/ask", "/explore", "/page/id/default/evil", "/api/v1/collections", "/no/such/page"]:
            policy = client.get(path).headers.get("content-security-policy", "")
            scripts = next(part for part in policy.split(";") if part.strip().startswith("script-src"))
            assert "'unsafe-inline'" not in scripts and "'unsafe-eval'" not in scripts, (path, policy)
            assert "frame-ancestors 'none'" in policy and "base-uri 'none'" in policy
            pages = client.get("/").text
    assert "<script>" not in pages.replace('<script type="application/json"', "")  # no inline script to allow
