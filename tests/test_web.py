"""The web face with real clients: headless Chromium on the SPARQL editor and the ask page,
rdflib dereferencing an entity IRI, Comunica's SPARQL client querying and updating.

Screenshots go to build/screenshots (the test artifacts); the explorer's are in test_explore.py."""

from __future__ import annotations

import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import httpx
import pytest
import rdflib

from sparqlrag.cli.parser import DEMO_QUESTION
from sparqlrag.server.auth import token_cookie
from tests.browser import SCREENSHOTS, fresh, wait_for
from tests.conftest import ROOT, LiveServer, start_server
from tests.documents_made import report_pdf

if TYPE_CHECKING:  # selenium is imported where a browser test runs
    from selenium.webdriver.remote.webdriver import WebDriver

COMUNICA = ROOT / ".cache" / "node" / "node_modules" / ".bin" / "fetch-sparql-endpoint"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The demo corpus behind a server whose base IRI is its own address (IRIs dereference)."""
    live, stop = start_server(tmp_path_factory.mktemp("web"), own_base_iri=True)
    with live.client() as client:
        for path in sorted((ROOT / "sparqlrag" / "demo" / "corpus").glob("*.md")):
            response = client.post("/api/v1/documents", json={"id": path.stem, "text": path.read_text()})
            assert response.status_code == 201, response.text
    yield live
    stop()


def test_entity_iris_redirect_to_a_page_or_to_rdf(client: httpx.Client, server: LiveServer) -> None:
    iri = server.settings.base_iri + "id/default/cern"
    for accept, target, media in [
        (
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "../../page/id/default/cern",
            "text/html",
        ),  # a browser
        ("text/turtle", "../../data/id/default/cern.ttl", "text/turtle"),
        ("application/rdf+xml", "../../data/id/default/cern.rdf", "application/rdf+xml"),
        ("application/ld+json", "../../data/id/default/cern.jsonld", "application/ld+json"),
        ("application/n-triples", "../../data/id/default/cern.nt", "application/n-triples"),
        ("*/*", "../../data/id/default/cern.ttl", "text/turtle"),
    ]:
        response = client.get(iri, headers={"Accept": accept})
        assert (
            response.status_code == 303
            and response.headers["location"] == target
            and "Accept" in response.headers["vary"]
        )
        followed = client.get(iri, headers={"Accept": accept}, follow_redirects=True)
        assert followed.status_code == 200 and followed.headers["content-type"].startswith(media), accept
    page = client.get("/page/id/default/cern").text
    assert (
        "<h1>CERN</h1>" in page
        and "is located near" in page
        and f'href="{server.settings.base_iri}id/default/geneva"' in page
    )
    assert "<mark>CERN is located near Geneva.</mark>" in page  # the fact's evidence sentence, marked in its chunk
    assert ">co-occurs with</a></td>" in page  # our own vocabulary's terms by their labels in vocab.ttl
    assert (
        '<link rel="alternate" type="text/turtle" href="../../../data/id/default/cern.ttl">' in page
        and ">jsonld</a>" in page
    )
    assert client.head(iri).status_code == 303
    for missing in [
        "id/default/no-such-thing",
        "id/nosuchcollection/cern",
        "id/Bad Name/x",
        "page/id/default/nothing",
        "data/id/default/cern.exe",
        "data/id/default/nothing.ttl",
        "doc/default/nothing",
        "page/nothing/default/x",
        "page/doc/default/cern/chunk/0000",
        "data/doc/nosuchcollection/cern.ttl",
        "rel/no-such-relation",
        "page/rel/%zz",
    ]:
        response = client.get("/" + missing)
        assert response.status_code == 404 and response.json()["error"] == "not_found", missing
    assert client.get(iri, headers={"Accept": "image/png"}).status_code == 406
    for raw in (
        b"/id/default/a%zz",
        b"/id/default/a{b",
        b"/page/id/default/%ZZ",
        b"/data/id/default/a%zz.ttl",
    ):  # no IRI at all
        with socket.create_connection(("127.0.0.1", int(server.url.rsplit(":", 1)[1]))) as conn:
            conn.sendall(b"GET " + raw + b" HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            status = conn.recv(64).split(b" ")[1]
        assert status in (b"400", b"404"), raw  # the HTTP parser or our 404; never a 500


def test_provenance_iris_dereference_from_fact_to_chunk_to_document(client: httpx.Client, server: LiveServer) -> None:
    base, html = server.settings.base_iri, {"Accept": "text/html"}
    page = client.get(base + "id/default/cern", headers=html, follow_redirects=True).text
    chunk = re.search(r'<a href="([^"]+/chunk/[0-9a-f]+)" class="source-link">', page).group(1)  # type: ignore[union-attr]
    assert client.get(chunk, headers=html).headers["location"].startswith("../../../../page/doc/default/cern/chunk/")
    chunk_page = client.get(chunk, headers=html, follow_redirects=True).text
    assert "Facts extracted from it" in chunk_page and "CERN is located near Geneva." in chunk_page
    assert f'<a href="{base}id/default/geneva">Geneva</a>' in chunk_page  # each fact leads back to its entities
    document = client.get(base + "doc/default/cern", headers=html, follow_redirects=True).text
    assert "<h1>CERN</h1>" in document and f'href="{chunk}"' in document  # the document lists its chunks
    graph = rdflib.Graph().parse(base + "doc/default/cern")  # the document as RDF: its metadata, its chunks
    assert (
        rdflib.URIRef(base + "doc/default/cern"),
        rdflib.URIRef("http://purl.org/dc/terms/title"),
        rdflib.Literal("CERN"),
    ) in graph
    assert (
        rdflib.URIRef(chunk),
        rdflib.URIRef("http://www.w3.org/ns/prov#wasDerivedFrom"),
        rdflib.URIRef(base + "doc/default/cern"),
    ) in graph


def test_relation_iris_dereference_to_the_facts_that_use_them(client: httpx.Client, server: LiveServer) -> None:
    relation = server.settings.base_iri + "rel/is-located-near"
    assert client.get(relation, headers={"Accept": "text/html"}).headers["location"] == "../page/rel/is-located-near"
    page = client.get(relation, headers={"Accept": "text/html"}, follow_redirects=True).text
    assert (
        "<h1>is located near</h1>" in page
        and f'<a href="{server.settings.base_iri}id/default/geneva">Geneva</a>' in page
    )
    graph = rdflib.Graph().parse(relation)
    assert (rdflib.URIRef(relation), rdflib.RDFS.label, rdflib.Literal("is located near")) in graph
    entity_page = client.get("/page/id/default/cern").text
    assert f'<a href="{relation}">is located near</a>' in entity_page  # the entity's page links its relations


def test_rdflib_dereferences_an_entity_iri(server: LiveServer) -> None:
    iri = server.settings.base_iri + "id/default/cern"
    graph = rdflib.Graph().parse(iri)  # rdflib asks for RDF, follows the 303, parses by media type
    assert (rdflib.URIRef(iri), rdflib.RDFS.label, rdflib.Literal("CERN")) in graph
    assert (
        rdflib.URIRef(iri),
        rdflib.URIRef(server.settings.base_iri + "rel/is-located-near"),
        rdflib.URIRef(server.settings.base_iri + "id/default/geneva"),
    ) in graph
    assert (
        rdflib.URIRef(server.settings.base_iri + "id/default/geneva"),
        rdflib.RDFS.label,
        rdflib.Literal("Geneva"),
    ) in graph


@pytest.mark.skipif(
    not COMUNICA.exists(),
    reason="Comunica's fetch-sparql-endpoint is not installed (`make install` fetches it with npm)",
)
def test_comunicas_sparql_client_queries_and_updates(server: LiveServer, client: httpx.Client) -> None:
    def comunica(query: str) -> str:
        done = subprocess.run(
            [str(COMUNICA), "--endpoint", server.sparql, "--query", query], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    comunica('INSERT DATA { GRAPH <urn:comunica> { <urn:a> <urn:said> "hello from Comunica" } }')
    said = comunica("SELECT ?o WHERE { GRAPH <urn:comunica> { <urn:a> <urn:said> ?o } }")
    assert '"o":"\\"hello from Comunica\\""' in said.replace(" ", "") or "hello from Comunica" in said
    assert "true" in comunica("ASK { <urn:a> <urn:said> ?o }")  # the union default graph
    got = client.get("/sparql", params={"query": "SELECT ?o WHERE { GRAPH <urn:comunica> { ?s ?p ?o } }"}).json()
    assert [b["o"]["value"] for b in got["results"]["bindings"]] == ["hello from Comunica"]


def wait_for_rows(driver: WebDriver, expected: Callable[[list[str]], bool], timeout: float = 60) -> list[str]:
    """The texts of YASR's result rows once they are what the test expects: a table left from an
    earlier query, or one being redrawn, is waited out rather than read."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def rows(d: object) -> list[str] | None:
        found = d.find_elements(By.CSS_SELECTOR, ".yasr table.dataTable tbody tr")  # type: ignore[attr-defined]
        texts = [row.text for row in found if row.is_displayed()]  # the open tab's, not a hidden tab's
        return texts if texts and expected(texts) else None

    return WebDriverWait(driver, timeout, ignored_exceptions=[StaleElementReferenceException]).until(rows)  # type: ignore[arg-type]


def labels_are(*labels: str) -> Callable[[list[str]], bool]:
    """Each row's last cell is the label, in order (a row still being drawn has no text yet: not yet)."""
    return lambda texts: [(text.split() or [""])[-1] for text in texts] == list(labels)


def test_yasgui_runs_a_select_and_shows_the_rows(browser: WebDriver, server: LiveServer) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    fresh(driver, server.url + "/")
    wait_for(driver, "#graphs li.collection")  # the collections listed beside the editor
    driver.find_element(By.LINK_TEXT, "knowledge").click()  # opens a query on that graph
    assert f"GRAPH <{server.settings.base_iri}graph/default>" in driver.execute_script(
        "return window.yasgui.getTab().getQuery();"
    )
    driver.execute_script(
        """const tab = window.yasgui.getTab(); tab.setQuery(arguments[0]); tab.getYasqe().query();""",
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\nSELECT ?label WHERE { GRAPH ?g { ?e rdfs:label ?label } "
        'FILTER(?label IN ("CERN", "Geneva")) } ORDER BY ?label',
    )
    wait_for_rows(driver, labels_are("CERN", "Geneva"))
    driver.save_screenshot(str(SCREENSHOTS / "yasgui-select.png"))
    driver.execute_script(
        """const tab = window.yasgui.getTab(); tab.setQuery(arguments[0]); tab.getYasqe().query();""",
        'INSERT DATA { GRAPH <urn:yasgui> { <urn:a> <urn:said> "from YASGUI" } }',
    )  # an update, sent as update=
    ask = {"query": 'ASK { GRAPH <urn:yasgui> { <urn:a> <urn:said> "from YASGUI" } }'}
    with server.client() as client:
        deadline = time.monotonic() + 30
        while not client.get("/sparql", params=ask).json()["boolean"] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.get("/sparql", params=ask).json()["boolean"]


def readme_service_queries() -> list[str]:
    """The queries of the README's section "Retrieval inside SPARQL", in order."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Retrieval inside SPARQL", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sparql\n(.*?)```", section, flags=re.DOTALL)


def test_yasgui_runs_the_readmes_retrieval_queries(browser: WebDriver, server: LiveServer) -> None:
    """Each example runs as YASGUI sends it and shows rows: a search scoped by date, Graph RAG
    with its trace joined, a scope through provenance, and one over the last answer's sources."""
    driver = browser
    fresh(driver, server.url + "/")
    wait_for(driver, "#graphs li.collection")
    queries = readme_service_queries()
    assert len(queries) == 4
    shown: list[str] = []
    for number, query in enumerate(queries):
        driver.execute_script(
            """const tab = window.yasgui.getTab(); tab.setQuery(arguments[0]); tab.getYasqe().query();""", query
        )
        shown = wait_for_rows(driver, lambda texts, before=shown: texts != before)  # type: ignore[misc]
        assert shown[0].split()[0] == "1", (number, shown)
        if number == 1:
            assert "CERN is located near Geneva" in shown[0]  # sr:graphRag's answer
        driver.save_screenshot(str(SCREENSHOTS / f"yasgui-retrieval-{number + 1}.png"))


def test_the_ask_page_shows_an_answer_its_sources_and_the_trace(browser: WebDriver, server: LiveServer) -> None:
    from selenium.webdriver.common.by import By

    driver = browser
    fresh(driver, server.url + "/ask")
    wait_for(driver, "#collection option")
    driver.find_element(By.ID, "question").send_keys(DEMO_QUESTION)
    driver.find_element(By.CSS_SELECTOR, "form.ask button").click()
    sources = wait_for(driver, ".turn .sources li.source")
    wait_for(driver, ".turn .trace-query:not([hidden])")
    assert "CERN" in driver.find_element(By.CSS_SELECTOR, ".turn .answer").text
    assert sources[0].find_elements(By.TAG_NAME, "a")[0].text  # a document title, linked to the chunk's page
    assert driver.find_elements(By.CSS_SELECTOR, ".turn .sources mark")  # the supporting sentence
    assert len(driver.find_elements(By.CSS_SELECTOR, ".turn svg.trace g.node.seed circle")) >= 1
    assert len(driver.find_elements(By.CSS_SELECTOR, ".turn svg.trace g.edge")) >= 2
    on_screen = driver.execute_script(  # the label's size as shown: the picture is never scaled down
        "const svg = document.querySelector('.turn svg.trace');"
        "const label = svg.querySelector('.node-label');"
        "const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;"
        "return parseFloat(getComputedStyle(label).fontSize) * scale"
    )
    assert on_screen >= 12
    assert len(driver.find_elements(By.CSS_SELECTOR, ".turn .facts li")) >= 2
    driver.save_screenshot(str(SCREENSHOTS / "ask-answer.png"))
    link = driver.find_element(By.CSS_SELECTOR, ".turn .trace-query").get_attribute("href")
    assert link is not None
    driver.get(link)  # the trace in YASGUI
    driver.execute_script("window.yasgui.getTab().getYasqe().query();")
    rows = wait_for_rows(driver, lambda texts: any("rel/invented" in text for text in texts))  # the trace's kept facts
    assert [text.split()[1] for text in rows] == sorted(
        text.split()[1] for text in rows
    )  # after the row number: the hop, in order
    driver.save_screenshot(str(SCREENSHOTS / "ask-trace-in-yasgui.png"))


def test_the_ask_page_is_a_conversation_whose_follow_ups_keep_their_context(
    browser: WebDriver, server: LiveServer
) -> None:
    """A follow-up ("it") is answered from the conversation; each turn keeps its answer, sources
    and trace; "New conversation" starts afresh."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver = browser
    fresh(driver, server.url + "/ask")
    wait_for(driver, "#collection option")
    Select(driver.find_element(By.ID, "mode")).select_by_value("document")
    for number, question in enumerate(["Where is CERN located?", "What does it operate?"], start=1):
        driver.find_element(By.ID, "question").send_keys(question)
        driver.find_element(By.CSS_SELECTOR, "form.ask button[type=submit]").click()
        wait_for(driver, f".turn:nth-child({number}) .sources li.source")
        WebDriverWait(driver, 60).until(lambda d: not d.find_element(By.ID, "question").get_attribute("value"))
    turns = driver.find_elements(By.CSS_SELECTOR, ".turn")
    assert [t.find_element(By.CSS_SELECTOR, ".asked").text for t in turns] == [
        "Where is CERN located?",
        "What does it operate?",
    ]
    assert "Geneva" in turns[0].find_element(By.CSS_SELECTOR, ".answer").text  # the first answer stays
    assert "Large Hadron Collider" in turns[1].find_element(By.CSS_SELECTOR, ".answer").text  # "it" is CERN
    driver.save_screenshot(str(SCREENSHOTS / "ask-conversation.png"))
    with server.client() as client:
        latest = client.get("/api/v1/traces", params={"limit": 1}).json()["traces"][0]
        trace = client.get(f"/api/v1/traces/{latest['id']}").json()
    assert trace["asked_as"] == "What does it operate?" and trace["carried"] == ["CERN"]
    driver.find_element(By.ID, "new-conversation").click()
    assert driver.find_elements(By.CSS_SELECTOR, ".turn") == []


def test_the_ask_page_asks_the_documents_picked_in_the_library(browser: WebDriver, server: LiveServer) -> None:
    """The library's "ask" link opens the ask page with that document chosen; the answer cites
    it alone, and "Whole collection" takes the choice back."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver = browser
    fresh(driver, server.url + "/library")
    links = wait_for(driver, "a.ask-document", count=5)
    chosen = "sparql"  # (a document that does not answer the question: only the choice brings it)
    next(a for a in links if a.get_attribute("href").endswith(f"document={chosen}")).click()
    wait_for(driver, "#documents option:checked")
    assert [o.get_attribute("value") for o in Select(driver.find_element(By.ID, "documents")).all_selected_options] == [
        chosen
    ]
    assert driver.find_element(By.ID, "scope").get_attribute("open") is not None
    Select(driver.find_element(By.ID, "mode")).select_by_value("document")
    driver.find_element(By.ID, "question").send_keys("Who invented the World Wide Web?")
    driver.find_element(By.CSS_SELECTOR, "form.ask button[type=submit]").click()
    sources = wait_for(driver, ".turn .sources li.source")
    cited = {s.find_elements(By.TAG_NAME, "a")[0].get_attribute("href") for s in sources}
    assert all(f"/doc/default/{chosen}/" in href for href in cited), cited
    driver.save_screenshot(str(SCREENSHOTS / "ask-chosen-documents.png"))
    driver.find_element(By.ID, "clear-documents").click()
    assert Select(driver.find_element(By.ID, "documents")).all_selected_options == []


def test_the_library_page_uploads_lists_reingests_and_deletes(
    browser: WebDriver, server: LiveServer, tmp_path: Path
) -> None:
    """A PDF uploaded through the page (with its progress bar) is listed with its pages, chunks
    and facts; a refused upload and a failed document say why; re-ingest and delete work."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with server.client() as client:
        assert client.post("/api/v1/collections", json={"name": "shelf"}).status_code == 201
    report, fake = tmp_path / "report.pdf", tmp_path / "fake.pdf"
    report.write_bytes(report_pdf())
    fake.write_bytes(b"this is no PDF")
    driver = browser
    fresh(driver, server.url + "/library?collection=shelf")
    wait_for(driver, "#documents td.none")
    assert driver.find_element(By.ID, "collection").get_attribute("value") == "shelf"

    def upload(path: Path) -> None:
        driver.find_element(By.ID, "files").send_keys(str(path))
        driver.find_element(By.CSS_SELECTOR, "form#upload button").click()

    upload(fake)
    WebDriverWait(driver, 30).until(lambda d: "Upload refused (400)" in d.find_element(By.ID, "status").text)
    assert "not a PDF" in driver.find_element(By.ID, "status").text
    upload(report)
    (ready,) = wait_for(driver, "#documents tr td.state.ready")
    cells = [cell.text for cell in ready.find_element(By.XPATH, "..").find_elements(By.TAG_NAME, "td")]
    assert cells[0].startswith("Annual report 2024") and cells[1:4] == ["PDF", "ready", "3"]
    assert int(cells[4]) >= 5 and int(cells[5]) > 0  # chunks, facts
    driver.save_screenshot(str(SCREENSHOTS / "library.png"))
    original = driver.find_element(By.CSS_SELECTOR, "#documents a.original").get_attribute("href")
    assert original is not None and httpx.get(original).content == report.read_bytes()

    driver.get(server.url + "/ask")  # its answer cites the page, and links the file open at it
    wait_for(driver, "#collection option")
    Select(driver.find_element(By.ID, "collection")).select_by_value("shelf")
    Select(driver.find_element(By.ID, "mode")).select_by_value("document")
    driver.find_element(By.ID, "question").send_keys("Where does the fund plan a hydrogen plant?")
    driver.find_element(By.CSS_SELECTOR, "form.ask button").click()
    first = wait_for(driver, ".turn .sources li.source")[0]
    assert first.find_elements(By.TAG_NAME, "a")[0].text == "Annual report 2024, p. 3"
    at_page = first.find_element(By.CSS_SELECTOR, "a.original").get_attribute("href")
    assert at_page is not None and at_page.endswith("/file/doc/shelf/report.pdf#page=3")
    driver.save_screenshot(str(SCREENSHOTS / "ask-cites-page.png"))

    document = server.settings.base_iri + "doc/shelf/report.pdf"  # failed as an extraction that fails leaves it
    with server.client() as client:
        marked = client.post(
            "/sparql",
            data={
                "update": f"""PREFIX sr: <https://w3id.org/sparqlrag/ns#>
                DELETE {{ GRAPH ?g {{ <{document}> sr:status ?s }} }}
                INSERT {{ GRAPH ?g {{ <{document}> sr:status "failed" ; sr:error "extraction took too long" }} }}
                WHERE {{ GRAPH ?g {{ <{document}> sr:status ?s }} }}"""
            },
        )
        assert marked.status_code == 204, marked.text
    driver.get(server.url + "/library?collection=shelf")
    (failed,) = wait_for(driver, "#documents td.state.failed")
    assert "extraction took too long" in failed.text
    driver.save_screenshot(str(SCREENSHOTS / "library-failed.png"))
    driver.find_element(By.CSS_SELECTOR, "#documents button.reingest").click()
    (again,) = wait_for(driver, "#documents td.state.ready")
    assert "extraction took too long" not in again.text
    driver.find_element(By.CSS_SELECTOR, "#documents button.delete").click()
    driver.switch_to.alert.accept()
    wait_for(driver, "#documents td.none")
    with server.client() as client:
        assert client.get("/api/v1/documents?collection=shelf").json()["documents"] == []


def test_the_pages_run_under_their_content_security_policy(browser: WebDriver, server: LiveServer) -> None:
    """Nothing the pages need is blocked by the policy (which runs no inline script)."""
    driver = browser
    driver.get_log("browser")  # type: ignore[attr-defined]  # what earlier tests left
    fresh(driver, server.url + "/")
    wait_for(driver, "#graphs li.collection")
    driver.execute_script("window.yasgui.getTab().getYasqe().query();")
    wait_for(driver, ".yasr table tbody tr")
    driver.get(server.url + "/ask")
    wait_for(driver, "#collection option")
    driver.get(server.url + "/library")
    wait_for(driver, "#documents tr td.state")
    cern = f"{server.settings.base_iri}id/default/cern"
    driver.get(server.url + "/explore?" + urlencode({"collection": "default", "entity": cern}))
    wait_for(driver, "svg.graph g.node", 3)  # d3 draws under the policy too
    driver.get(server.settings.base_iri + "id/default/cern")
    wait_for(driver, "table.facts")
    console = [entry["message"] for entry in driver.get_log("browser")]  # type: ignore[attr-defined]
    assert not [message for message in console if "Content Security Policy" in message], console


def test_without_yasgui_the_editor_page_says_so_and_still_lists_the_collections(
    browser: WebDriver, server: LiveServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """An offline installation with no copy of YASGUI (and the CDN out of reach) tells the user,
    rather than staying on "loading…"."""
    from selenium.webdriver.common.by import By

    from sparqlrag.server import pages

    monkeypatch.setattr(pages, "YASGUI_LOCAL", tmp_path)  # no copy here
    monkeypatch.setattr(pages, "YASGUI_CDN", "http://127.0.0.1:9/")  # a closed port: the CDN out of reach
    driver = browser
    fresh(driver, server.url + "/")
    (message,) = wait_for(driver, "#yasgui #no-editor")
    assert "could not be loaded" in message.text and server.url + "/sparql" in message.text
    wait_for(driver, "#graphs li.collection")
    driver.find_element(By.LINK_TEXT, "knowledge").click()  # no editor to open: nothing breaks
    assert driver.find_elements(By.CSS_SELECTOR, "#no-editor")


def test_with_tokens_the_pages_ask_for_one_and_use_it(browser: WebDriver, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    secured, stop = start_server(tmp_path, own_base_iri=True, read_tokens=["browser-token"], write_tokens=["writer"])
    try:
        with secured.client("writer") as client:
            assert (
                client.post(
                    "/api/v1/documents", json={"id": "cern", "text": "CERN is located near Geneva."}
                ).status_code
                == 201
            )
        driver = browser
        driver.get(secured.url + "/")
        wait_for(driver, "#graphs li.error")  # no token yet: the collections cannot be listed, and the page says so
        driver.find_element(By.ID, "token").send_keys("browser-token", Keys.ENTER)
        wait_for(driver, "#graphs li.collection")  # reloaded, with the token
        driver.execute_script(
            """const tab = window.yasgui.getTab(); tab.setQuery(arguments[0]); tab.getYasqe().query();""",
            "SELECT ?label WHERE { GRAPH ?g { ?e <http://www.w3.org/2000/01/rdf-schema#label> ?label } "
            'FILTER(?label IN ("CERN", "Geneva")) } ORDER BY ?label',
        )
        wait_for_rows(driver, labels_are("CERN", "Geneva"))
        from selenium.webdriver.support.ui import WebDriverWait

        driver.get(secured.settings.base_iri + "id/default/cern")  # a plain link: the cookie carries the token
        assert driver.find_element(By.TAG_NAME, "h1").text == "CERN"
        cookie = token_cookie(secured.settings)
        assert [c["value"] for c in driver.get_cookies() if c["name"] == cookie] == ["browser-token"]
        # a write token is kept in the tab alone: no cookie (cookies go to every port of the host)
        driver.get(secured.url + "/")
        driver.execute_script(
            "const field = document.getElementById('token'); field.value = 'writer';"
            "field.dispatchEvent(new Event('change'));"
        )
        WebDriverWait(driver, 60).until(lambda d: not [c for c in d.get_cookies() if c["name"] == cookie])
        wait_for(driver, "#graphs li.collection")
        assert driver.execute_script("return sessionStorage.getItem('sparqlrag.token')") == "writer"
        assert driver.execute_script("return localStorage.getItem('sparqlrag.token')") is None
    finally:
        stop()


def test_pages_are_served_and_yasgui_falls_back_to_the_cdn(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sparqlrag.server import pages

    assert 'src="static/vendor/yasgui/yasgui.min.js"' in client.get("/").text
    monkeypatch.setattr(pages, "YASGUI_LOCAL", tmp_path)  # as if `make install` could not fetch it
    assert f'src="{pages.YASGUI_CDN}yasgui.min.js"' in client.get("/").text
    ask = client.get("/ask")
    assert ask.status_code == 200 and 'src="static/ask.js"' in ask.text
    assert client.get("/static/ask.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/static/nothing.js").status_code == 404
