"""The graph explorer: its JSON routes over real HTTP (bounds, a hub of 100,000 facts, filters,
evidence, grants) and the /explore page in headless Chromium (drawing, expanding, evidence,
curation, what a read token and a limited token see). Screenshots go to build/screenshots."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest

from sparqlrag.queries.neighbourhood import MAX_DEPTH, MAX_LIMIT
from tests.browser import SCREENSHOTS, fresh, wait_for
from tests.conftest import ADMIN, ROOT, LiveServer, start_server
from tests.documents_made import report_pdf

READER, ALPHA = "reader-token", "alpha-reader"
HUB_FACTS = 100_000
TEXTS = {
    "alpha": "Ada Byron wrote notes on the Analytical Engine.",
    "beta": "Grace Hopper wrote the first compiler.",
    "curated": "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL.",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo corpus in `default`, a collection each for alpha, beta and curation, a PDF report
    in `papers`, and `hub`: one entity with HUB_FACTS facts, loaded through the Graph Store protocol."""
    live, stop = start_server(
        tmp_path_factory.mktemp("explore"),
        own_base_iri=True,
        write_tokens=[ADMIN],
        read_tokens=[READER],
        collection_tokens={ALPHA: ["read:alpha"]},
        answer_rate=0,
    )
    base = live.settings.base_iri
    with live.client(ADMIN) as admin:
        for path in sorted((ROOT / "sparqlrag" / "demo" / "corpus").glob("*.md")):
            assert admin.post("/api/v1/documents", json={"id": path.stem, "text": path.read_text()}).status_code == 201
        for name, text in TEXTS.items():
            assert admin.post("/api/v1/collections", json={"name": name}).status_code == 201
            made = admin.post(f"/api/v1/documents?collection={name}", json={"id": "d1", "text": text})
            assert made.status_code == 201, made.text
        assert admin.post("/api/v1/collections", json={"name": "papers"}).status_code == 201
        files = [("file", ("report.pdf", report_pdf(), "application/pdf"))]  # 3 pages
        assert admin.post("/api/v1/documents?collection=papers", files=files).status_code == 201
        assert admin.post("/api/v1/collections", json={"name": "hub"}).status_code == 201
        lines = [f"<{base}id/hub/centre> <{base}rel/links> <{base}id/hub/n{i}> .\n" for i in range(HUB_FACTS)]
        lines.append(f'<{base}id/hub/centre> <http://www.w3.org/2000/01/rdf-schema#label> "Centre" .\n')
        loaded = admin.post(
            f"/store?graph={quote(base + 'graph/hub', safe='')}",
            content="".join(lines).encode(),
            headers={"Content-Type": "application/n-triples"},
        )
        assert loaded.status_code in (200, 201, 204), loaded.text
    yield live
    stop()


def entity(server: LiveServer, name: str, collection: str = "default") -> str:
    return f"{server.settings.base_iri}id/{collection}/{name}"


def graph(client: httpx.Client, collection: str = "default", **params: Any) -> httpx.Response:
    return client.get(f"/api/v1/collections/{collection}/graph?{urlencode(params)}")


def test_the_graph_route_draws_an_entitys_neighbourhood(server: LiveServer, admin: httpx.Client) -> None:
    cern = entity(server, "cern")
    found = graph(admin, entity=cern, depth=1)
    assert found.status_code == 200, found.text
    body = found.json()
    labels = {node["label"] for node in body["nodes"]}
    assert {"CERN", "Geneva", "Large Hadron Collider", "World Wide Web"} <= labels
    assert "Switzerland" not in labels  # two hops away
    centre = next(node for node in body["nodes"] if node["id"] == cern)
    assert centre["hop"] == 0 and centre["degree"] >= 4 and not centre["hub"]
    near = next(e for e in body["edges"] if e["label"] == "is located near")
    assert near["source"] == cern and near["target"] == entity(server, "geneva")
    assert near["evidence"] == 1 and near["reifier"].startswith(f"{server.settings.base_iri}stmt/default/")
    assert {d["id"] for d in body["documents"]} >= {"cern", "berners-lee"}
    deeper = graph(admin, entity=cern, depth=2).json()
    assert "Switzerland" in {node["label"] for node in deeper["nodes"]}
    assert {e["id"] for e in body["edges"]} <= {e["id"] for e in deeper["edges"]}  # the same ids each time
    alone = graph(admin, entity=cern, depth=0).json()
    assert [node["id"] for node in alone["nodes"]] == [cern] and alone["edges"] == []


def test_the_filters_keep_one_relation_or_one_documents_facts(server: LiveServer, admin: httpx.Client) -> None:
    berners_lee = entity(server, "tim-berners-lee")
    invented = f"{server.settings.base_iri}rel/invented"
    only = graph(admin, entity=berners_lee, depth=2, relation=invented).json()
    assert {e["predicate"] for e in only["edges"]} == {invented}
    from_cern = graph(admin, entity=entity(server, "cern"), depth=1, document="cern").json()
    assert "World Wide Web" not in {node["label"] for node in from_cern["nodes"]}  # stated in berners-lee only
    assert "Geneva" in {node["label"] for node in from_cern["nodes"]}


def test_the_graph_routes_bounds_and_refusals_name_the_problem(server: LiveServer, admin: httpx.Client) -> None:
    before = server.dataset(ADMIN)
    cern = entity(server, "cern")
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"entity": cern, "depth": MAX_DEPTH + 1}, "depth"),
        ({"entity": cern, "limit": MAX_LIMIT + 1}, "limit"),
        ({"entity": cern, "limit": 0}, "limit"),
        ({"entity": cern, "depth": "two"}, "depth"),
        ({"entity": "CERN"}, "entity"),  # a name, not an IRI
        ({}, "entity"),
    ]
    for params, named in refusals:
        refused = graph(admin, **params)
        assert refused.status_code == 400 and refused.json()["error"] == "bad_request", (params, refused.text)
        assert refused.json()["detail"].startswith(named), refused.text
    unknown = graph(admin, entity=entity(server, "nobody"))
    assert unknown.status_code == 404 and unknown.json()["error"] == "unknown_entity"
    bad = graph(admin, entity=cern + "<>")
    assert bad.status_code == 400 and "entity" in bad.json()["detail"]
    assert graph(admin, collection="nowhere", entity=cern).status_code == 404
    assert server.dataset(ADMIN) == before


def test_a_hub_of_100k_facts_is_drawn_capped_within_the_deadline(server: LiveServer, admin: httpx.Client) -> None:
    """The hub's facts are counted, not all read: its answer keeps to the limit and says there is more."""
    centre = entity(server, "centre", "hub")
    found = graph(admin, "hub", entity=centre, depth=2, limit=50)
    assert found.status_code == 200, found.text  # (past the query deadline it would be a 503)
    body = found.json()
    assert len(body["nodes"]) == 50 and len(body["edges"]) == 49 and body["truncated"]
    hub = body["nodes"][0]
    assert hub["id"] == centre and hub["degree"] == HUB_FACTS and hub["hub"] and hub["label"] == "Centre"
    leaf = graph(admin, "hub", entity=entity(server, "n7", "hub"), depth=3, limit=MAX_LIMIT).json()
    assert [node["label"] for node in leaf["nodes"]] == ["n7", "Centre"]  # the hub is drawn, not expanded
    assert leaf["nodes"][1]["hub"] and not leaf["truncated"]


def test_a_facts_evidence_names_its_sentence_document_and_file(server: LiveServer, admin: httpx.Client) -> None:
    base = server.settings.base_iri
    fact = {
        "subject": entity(server, "cern"),
        "predicate": f"{base}rel/is-located-near",
        "object": entity(server, "geneva"),
    }
    found = admin.get(f"/api/v1/collections/default/graph/fact?{urlencode(fact)}")
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["labels"] == ["CERN", "is located near", "Geneva"]
    (evidence,) = body["evidence"]
    assert evidence["sentence"] == "CERN is located near Geneva."
    assert evidence["passage"]["document"] == f"{base}doc/default/cern" and evidence["passage"]["title"] == "CERN"
    assert evidence["passage"]["file"] == f"{base}file/doc/default/cern"
    assert admin.get(evidence["passage"]["file"]).status_code == 200  # the link opens the original
    paged = {
        "subject": entity(server, "maria-okonkwo", "papers"),
        "predicate": f"{base}rel/leads-fund-from",
        "object": entity(server, "oslo", "papers"),
    }
    (on_page,) = admin.get(f"/api/v1/collections/papers/graph/fact?{urlencode(paged)}").json()["evidence"]
    assert on_page["passage"]["pages"] == [2, 2] and on_page["passage"]["citation"] == "Annual report 2024, p. 2"
    assert on_page["passage"]["file"] == f"{base}file/doc/papers/report.pdf#page=2"
    missing = admin.get(
        f"/api/v1/collections/default/graph/fact?{urlencode(fact | {'object': entity(server, 'oslo')})}"
    )
    assert missing.status_code == 404 and missing.json()["error"] == "unknown_fact"
    bad = admin.get(f"/api/v1/collections/default/graph/fact?{urlencode(fact | {'predicate': 'not an iri'})}")
    assert bad.status_code == 400 and bad.json()["detail"].startswith("predicate")


def test_entities_are_found_by_name_and_by_alias(server: LiveServer, admin: httpx.Client) -> None:
    found = admin.get("/api/v1/collections/default/entities?search=CERN").json()["entities"]
    assert found[0]["entity"] == entity(server, "cern") and found[0]["label"] == "CERN"
    by_alias = admin.get("/api/v1/collections/curated/entities?search=W3C").json()["entities"]
    assert by_alias[0]["label"] == "World Wide Web Consortium" and by_alias[0]["name"] == "W3C"
    assert admin.get("/api/v1/collections/default/entities?search=%20").status_code == 400
    assert admin.get("/api/v1/collections/default/entities?search=x&limit=51").status_code == 400


def test_a_limited_token_reaches_its_own_collections_graph_alone(server: LiveServer) -> None:
    with server.client(ALPHA) as reader:
        own = graph(reader, "alpha", entity=entity(server, "ada-byron", "alpha"))
        assert own.status_code == 200 and own.json()["nodes"][0]["label"] == "Ada Byron"
        other = graph(reader, "beta", entity=entity(server, "grace-hopper", "beta"))
        assert other.status_code == 403 and "Grace" not in other.text
        smuggled = graph(reader, "alpha", entity=entity(server, "grace-hopper", "beta"))
        assert smuggled.status_code == 404 and "Grace Hopper" not in smuggled.text
        assert reader.get("/api/v1/collections/beta/entities?search=Grace").status_code == 403


# -- the page ---------------------------------------------------------------------------------------


def open_explorer(driver: Any, server: LiveServer, token: str, **params: str) -> None:
    """The explorer with `token` typed (kept in the tab, as the token field keeps it)."""
    fresh(driver, server.url + "/explore")
    driver.execute_script("sessionStorage.setItem('sparqlrag.token', arguments[0]);", token)
    driver.get(server.url + "/explore?" + urlencode(params))


def node(driver: Any, iri: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'svg.graph g.node[data-id="{iri}"] circle')


def node_labels(driver: Any) -> set[str]:
    """The drawn nodes' labels, read at once (a redrawing replaces the elements)."""
    script = "return [...document.querySelectorAll('svg.graph g.node .node-label')].map((e) => e.textContent)"
    return set(driver.execute_script(script))


def test_the_explorer_draws_cern_expands_a_node_and_shows_an_edges_evidence(browser: Any, server: LiveServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver = browser
    open_explorer(driver, server, READER, collection="default")
    wait_for(driver, "#document option", 2)  # the collection opened
    driver.find_element(By.ID, "search").send_keys("CERN")
    driver.find_element(By.CSS_SELECTOR, "#find button").click()
    wait_for(driver, "#found button.entity")[0].click()  # the nearest: CERN
    wait_for(driver, "svg.graph g.node", 4)
    Select(driver.find_element(By.ID, "depth")).select_by_visible_text("1")  # one hop: Tim Berners-Lee is two away
    WebDriverWait(driver, 30).until(lambda d: "Tim Berners-Lee" not in " ".join(node_labels(d)))
    assert {"CERN", "Geneva", "Large Hadron Collider", "World Wide Web"} <= {
        label.split(" (")[0] for label in node_labels(driver)
    }
    assert driver.find_element(By.CSS_SELECTOR, "#details h2").text == "CERN"
    drawn = len(driver.find_elements(By.CSS_SELECTOR, "svg.graph g.node"))
    node(driver, entity(server, "world-wide-web")).click()  # expanding adds its neighbours
    WebDriverWait(driver, 30).until(lambda d: len(node_labels(d)) > drawn)
    assert "Tim Berners-Lee" in " ".join(node_labels(driver))
    assert driver.find_element(By.CSS_SELECTOR, "#details h2").text == "World Wide Web"
    size = driver.execute_script(
        "return parseFloat(getComputedStyle(document.querySelector('svg.graph .node-label')).fontSize)"
    )
    scale = driver.execute_script(
        "const s = document.querySelector('svg.graph');return s.getBoundingClientRect().width / s.viewBox.baseVal.width"
    )
    assert size * scale >= 12  # labels as large on screen as they are in the style sheet
    driver.save_screenshot(str(SCREENSHOTS / "explore-cern.png"))

    located = next(
        e
        for e in driver.find_elements(By.CSS_SELECTOR, "svg.graph g.edge")
        if "is located near" in e.find_element(By.TAG_NAME, "title").get_attribute("textContent")
    )
    located.send_keys("\n")  # keyboard: the edge is a button
    evidence = wait_for(driver, "#details li.evidence")
    assert "CERN is located near Geneva." in evidence[0].find_element(By.CSS_SELECTOR, "q.sentence").text
    links = {a.text: a.get_attribute("href") for a in evidence[0].find_elements(By.TAG_NAME, "a")}
    assert links["CERN"] == f"{server.settings.base_iri}doc/default/cern"
    assert links["open the file"] == f"{server.settings.base_iri}file/doc/default/cern"
    assert not driver.find_elements(By.CSS_SELECTOR, "form.curation, button.split")  # a read token
    driver.save_screenshot(str(SCREENSHOTS / "explore-evidence.png"))

    open_explorer(driver, server, READER, collection="papers", entity=entity(server, "maria-okonkwo", "papers"))
    wait_for(driver, "svg.graph g.edge")[0].click()
    evidence = wait_for(driver, "#details li.evidence")
    assert "page 2" in evidence[0].text and "Maria Okonkwo leads the fund from Oslo." in evidence[0].text
    original = evidence[0].find_element(By.CSS_SELECTOR, "a.original")
    assert original.text == "open the file at this page"
    assert original.get_attribute("href") == f"{server.settings.base_iri}file/doc/papers/report.pdf#page=2"


def test_the_explorer_merges_and_splits_with_a_write_token_and_shows_a_refusal(
    browser: Any, server: LiveServer
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    w3c = entity(server, "world-wide-web-consortium", "curated")
    open_explorer(driver, server, ADMIN, collection="curated", entity=w3c)
    wait_for(driver, "#details ul.merges li")
    assert "acronym" in driver.find_element(By.CSS_SELECTOR, "#details ul.merges li").text  # why they were merged
    wait_for(driver, "#details button.split")[0].click()  # W3C is something else
    WebDriverWait(driver, 30).until(lambda d: "Kept apart: W3C" in d.find_element(By.ID, "details").text)
    with server.client(ADMIN) as admin:
        aliases = admin.get(f"/api/v1/collections/curated/entities/aliases?{urlencode({'entity': w3c})}").json()
        assert aliases["kept_apart"] == ["W3C"] and not aliases["merges"]

    other = wait_for(driver, "#merge-other")[0]
    other.send_keys("World Wide Web Consortium")  # itself: refused, and the page says why
    driver.find_element(By.CSS_SELECTOR, "form.curation button").click()
    refusal = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "curation-result").text or None)
    assert refusal.startswith("Refused: 409") and "one thing already" in refusal
    other = driver.find_element(By.ID, "merge-other")
    other.clear()
    other.send_keys("W3C")
    driver.find_element(By.CSS_SELECTOR, "form.curation button").click()
    WebDriverWait(driver, 30).until(lambda d: "Merged" in d.find_element(By.ID, "status").text)
    wait_for(driver, "#details ul.merges li")
    assert "curated" in driver.find_element(By.CSS_SELECTOR, "#details ul.merges").text
    driver.save_screenshot(str(SCREENSHOTS / "explore-curation.png"))


def test_a_limited_token_cannot_draw_another_collections_entities(browser: Any, server: LiveServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = browser
    open_explorer(driver, server, ALPHA, collection="beta", entity=entity(server, "grace-hopper", "beta"))
    status = WebDriverWait(driver, 30).until(lambda d: d.find_element(By.ID, "status").text or None)
    assert status.startswith("Cannot draw the graph: 404")  # asked in alpha, the one collection it reads
    assert [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#collection option")] == ["alpha"]
    assert not driver.find_elements(By.CSS_SELECTOR, "svg.graph g.node")
    assert "Grace" not in driver.find_element(By.TAG_NAME, "body").text


def test_the_explorer_draws_a_trace(browser: Any, server: LiveServer) -> None:
    from selenium.webdriver.common.by import By

    with server.client(ADMIN) as admin:
        asked = admin.post("/api/v1/graph-rag", json={"question": "Where is CERN located?"})
        assert asked.status_code == 200, asked.text
    trace = asked.json()["trace"].rsplit("/", 1)[1]
    driver = browser
    open_explorer(driver, server, READER, collection="default", trace=trace)
    seeds = wait_for(driver, "svg.graph g.node.seed")
    assert any("CERN" in s.text for s in seeds)
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.graph g.node.source")) == len(asked.json()["sources"])
    assert len(driver.find_elements(By.CSS_SELECTOR, "svg.graph g.edge.hop1")) >= 2
    assert driver.find_element(By.CSS_SELECTOR, "#details h2").text == "Where is CERN located?"
    driver.save_screenshot(str(SCREENSHOTS / "explore-trace.png"))
    driver.find_element(By.CSS_SELECTOR, "svg.graph g.edge.hop1").send_keys("\n")  # how the walk kept it
    kept = wait_for(driver, "#details p.walked")[0].text
    assert kept.startswith("Kept at hop 1, score 0.")


def test_without_d3_the_explorer_says_so_and_still_finds_and_lists(
    browser: Any, server: LiveServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An installation without d3 (npm was out of reach at `make install`) tells the user; the
    search, the details and the evidence still work."""
    from selenium.webdriver.common.by import By

    from sparqlrag.server import pages

    monkeypatch.setattr(pages, "D3_LOCAL", tmp_path / "d3.min.js")  # no copy here
    driver = browser
    open_explorer(driver, server, READER, collection="default", entity=entity(server, "cern"))
    (message,) = wait_for(driver, "#missing:not([hidden])")
    assert "make install" in message.text
    assert wait_for(driver, "#details h2")[0].text == "CERN"
    assert not driver.find_elements(By.CSS_SELECTOR, "svg.graph g.node")


def test_every_page_links_the_explorer_and_entity_and_trace_pages_open_it_there(
    server: LiveServer, admin: httpx.Client
) -> None:
    cern = entity(server, "cern")
    for page in ("/", "/ask", "/library", "/explore", "/page/id/default/cern"):
        assert ">Explore</a>" in admin.get(page).text, page  # the top bar's link
    entity_page = admin.get("/page/id/default/cern").text
    assert f"explore?{urlencode({'collection': 'default', 'entity': cern})}".replace("&", "&amp;") in entity_page
    asked = admin.post("/api/v1/graph-rag", json={"question": "Where is CERN located?"})
    trace = asked.json()["trace"].rsplit("/", 1)[1]
    trace_page = admin.get(f"/page/trace/default/{trace}").text
    assert f"explore?{urlencode({'collection': 'default', 'trace': trace})}".replace("&", "&amp;") in trace_page


def text_in_details(text: str) -> Callable[[Any], bool]:
    """A wait's condition: the details beside the picture show `text`."""
    from selenium.webdriver.common.by import By

    return lambda driver: text in driver.find_element(By.ID, "details").text


def test_hostile_names_and_iris_are_drawn_as_text_and_never_linked(browser: Any, server: LiveServer) -> None:
    """A label that is markup and neighbours whose IRIs are javascript: or data: URLs, written by
    a write token: the explorer draws them as text and links none of them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base = server.settings.base_iri
    evil, relation = entity(server, "evil", "evil"), f"{base}rel/links-to"
    label = "<img src=x onerror='window.pwned=1'>"
    hostile = ["javascript:window.pwned=2", "data:text/html,<script>window.pwned=3</script>"]
    facts = " ".join(
        [f'<{evil}> <http://www.w3.org/2000/01/rdf-schema#label> "{label}" .']
        + [f"<{evil}> <{relation}> <{quote(iri, safe=':,=')}> ." for iri in hostile]
    )
    with server.client(ADMIN) as admin:
        assert admin.post("/api/v1/collections", json={"name": "evil"}).status_code == 201
        update = f"INSERT DATA {{ GRAPH <{base}graph/evil> {{ {facts} }} }}"
        assert admin.post("/sparql", data={"update": update}).status_code == 204
    driver = browser
    open_explorer(driver, server, READER, collection="evil", entity=evil)
    wait_for(driver, "svg.graph g.node", 3)
    assert any(text.startswith("<img src=x") for text in node_labels(driver))  # the markup, shown as its text
    for iri in hostile:  # each neighbour opened: its details show its IRI, unlinked
        driver.find_element(By.CSS_SELECTOR, f'svg.graph g.node[data-id="{quote(iri, safe=":,=")}"] circle').click()
        WebDriverWait(driver, 30).until(text_in_details(quote(iri, safe=":,=")))
    hrefs = driver.execute_script("return [...document.querySelectorAll('[href]')].map((a) => a.getAttribute('href'))")
    assert not [h for h in hrefs if h.strip().lower().startswith(("javascript:", "data:"))], hrefs
    assert driver.execute_script("return window.pwned") is None
    assert not driver.find_elements(By.CSS_SELECTOR, "#details img, svg.graph img, #graph foreignObject")
