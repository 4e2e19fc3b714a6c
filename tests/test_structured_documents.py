"""Documents as people have them (PDF, HTML, DOCX made here): headings and pages survive
decoding, page furniture and site boilerplate do not, titles come from the files; over HTTP,
chunks carry their pages and heading paths, a fact's provenance reaches its page in SPARQL and
in the RDF 1.1 dump, answers cite the page, and the original file comes back byte for byte to
those who may read its collection."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import rdflib

from sparqlrag.extraction.chunker import split
from sparqlrag.extraction.decoders import DOCX, HTML, PDF, DecodeError, DecodeLimits, decode
from sparqlrag.extraction.structure import Block, assemble, placed, sections
from tests.conftest import ADMIN, LiveServer, start_server
from tests.documents_made import DIV_PAGE, NEWS_PAGE, REPORT, RUNNING_HEADER, memo_docx, report_pdf

OTHER_READER = "other-reader"
REPORT_PDF, MEMO_DOCX = report_pdf(), memo_docx()  # (each made once: fpdf2 stamps the time of making)
PREFIXES = """PREFIX sr: <https://w3id.org/sparqlrag/ns#> PREFIX prov: <http://www.w3.org/ns/prov#>
PREFIX dcterms: <http://purl.org/dc/terms/> PREFIX bibo: <http://purl.org/ontology/bibo/>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
"""


def _where(decoded: Any, phrase: str) -> tuple[int | None, tuple[str, ...]]:
    at = decoded.text.index(phrase)
    (span,) = [s for s in decoded.spans if s.start <= at < s.end]
    return span.page, span.headings


def test_a_pdf_keeps_pages_and_headings_and_drops_its_furniture() -> None:
    decoded = decode(report_pdf(), None, "report.pdf")
    assert (decoded.media_type, decoded.title, decoded.pages) == (PDF, "Annual report 2024", 3)
    assert RUNNING_HEADER not in decoded.text and "Page 1" not in decoded.text and "Page 3" not in decoded.text
    assert _where(decoded, "Fjord Wind runs the Hywind") == (1, ("Funding", "Wind projects"))
    assert _where(decoded, "Maria Okonkwo leads") == (2, ("Staff",))
    assert _where(decoded, "hydrogen plant in Tromso") == (3, ("Outlook",))
    assert "Funding\n\nThe Nordic Energy Fund" in decoded.text  # a heading is a paragraph of its own


def test_a_pdf_without_a_title_is_named_by_its_first_heading() -> None:
    assert decode(report_pdf(title=None), PDF).title == "Funding"


def test_an_html_page_keeps_its_article_and_headings_and_drops_menus_and_footers() -> None:
    decoded = decode(NEWS_PAGE, None, "news.html")
    assert (decoded.media_type, decoded.title) == (HTML, "Wind power in the Nordics")
    for boilerplate in ("Home", "Contact", "Copyright", "Privacy"):
        assert boilerplate not in decoded.text
    assert _where(decoded, "Lars Berg") == (None, ("Wind power in the Nordics", "Projects", "Offshore"))


def test_a_landmark_found_twice_is_dropped_once() -> None:
    """`<header role="banner">` is both a page header and a banner: dropping it twice was a 500."""
    page = b'<html><body><header role="banner">Menu</header><nav role="navigation">Home</nav><p>Oslo.</p></body></html>'
    assert decode(page, HTML).text == "Oslo."


def test_an_xhtml_page_with_its_xml_declaration_is_read() -> None:
    xhtml = (
        b'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml">'
        b"<head><title>Fjords</title></head><body><nav>Home</nav><main><h1>Fjords</h1>"
        b"<p>Oslo is in Norway.</p></main></body></html>"
    )
    decoded = decode(xhtml, "application/xhtml+xml")
    assert (decoded.text, decoded.title) == ("Fjords\n\nOslo is in Norway.", "Fjords")


@pytest.mark.parametrize("depth", [1500, 100_000])
def test_a_deeply_nested_page_is_read_or_refused_never_a_crash(depth: int) -> None:
    nested = "<div>" * depth + "<p>Oslo is in Norway.</p>" + "</div>" * depth
    page = f"<html><body>{nested}</body></html>".encode()
    try:
        assert decode(page, HTML).text == "Oslo is in Norway."
    except DecodeError as refused:  # past the HTML parser's own limit on nesting (about 2,000)
        assert depth > 2000 and "no text" in str(refused)


def test_a_page_without_landmarks_loses_its_menu_and_footer_but_not_its_headings() -> None:
    decoded = decode(DIV_PAGE, HTML)
    assert "Contact" not in decoded.text and "Copyright" not in decoded.text, decoded.text
    assert _where(decoded, "satellite collars") == (None, ("Field notes from Svalbard", "Equipment"))


def test_a_docx_keeps_heading_styles_and_tables_and_not_its_page_header() -> None:
    decoded = decode(memo_docx(), None, "memo.docx")
    assert (decoded.media_type, decoded.title, decoded.pages) == (DOCX, "Board memo", None)
    assert "CONFIDENTIAL" not in decoded.text and "recycled" not in decoded.text
    assert "Maria Okonkwo | Oslo" in decoded.text
    assert _where(decoded, "Statkraft pays") == (None, ("Decisions", "Budget"))
    assert _where(decoded, "engineers in Narvik") == (None, ("Next steps",))
    assert decode(memo_docx(), None, None).media_type == DOCX  # told by its content


def test_a_docx_that_unpacks_past_the_limit_is_refused_before_it_is_parsed() -> None:
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("word/document.xml", "w") as f:
        zeros = bytes(1 << 20)
        for _ in range(DecodeLimits().unpacked_bytes // len(zeros) + 1):
            f.write(zeros)
    assert len(bomb.getvalue()) < 2 * 1024 * 1024
    with pytest.raises(DecodeError, match="expands to over .*decode_max_unpacked_bytes"):
        decode(bomb.getvalue(), DOCX)
    with pytest.raises(DecodeError, match="not a ZIP"):
        decode(b"PK\x03\x04 but no archive", DOCX)
    broken = bytearray(MEMO_DOCX)  # its body's compressed stream damaged: zlib's error is a refusal too
    with zipfile.ZipFile(io.BytesIO(MEMO_DOCX)) as archive:
        member = archive.getinfo("word/document.xml")
    start = member.header_offset + 30 + len(member.filename) + len(member.extra)
    broken[start + 10 : start + 40] = bytes(range(30))
    with pytest.raises(DecodeError, match="cannot be read"):
        decode(bytes(broken), DOCX)


def test_no_entity_is_expanded_and_no_file_read_from_html_or_docx(tmp_path: Any) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    doctype = f'<!DOCTYPE html [<!ENTITY x SYSTEM "file://{secret}"><!ENTITY y "EXPANDED-ENTITY">]>'
    page = decode(f"{doctype}<html><body><p>Oslo &x; and &y; here.</p></body></html>".encode(), HTML)
    assert "TOP-SECRET" not in page.text and "EXPANDED-ENTITY" not in page.text
    hostile = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(MEMO_DOCX)) as source, zipfile.ZipFile(hostile, "w") as target:
        for member in source.infolist():
            data = source.read(member)
            if member.filename == "word/document.xml":
                head, _, rest = data.decode().partition("?>")
                entity = f'<!DOCTYPE w:document [<!ENTITY x SYSTEM "file://{secret}">]>'
                data = (head + "?>" + entity + rest.replace("Narvik", "Narvik &x;")).encode()
            target.writestr(member, data)
    try:
        memo = decode(hostile.getvalue(), DOCX)
    except DecodeError:
        return  # refused outright is as good
    assert "TOP-SECRET" not in memo.text and "Narvik" in memo.text


def test_chunks_keep_to_their_sections_and_learn_their_pages() -> None:
    blocks = [
        Block("Intro", 1, 1),
        Block("First words. " * 30, 0, 1),
        Block("more of the same paragraph", 0, 2, continues=True),
        Block("Method", 1, 2),
        Block("Second words. " * 5, 0, 2),
    ]
    text, spans = assemble(blocks)
    chunks = split(text, size=300, overlap=50, sections=sections(spans, len(text)))
    places = [placed(spans, c.offset, c.offset + len(c.text)) for c in chunks]
    assert all("Method" not in c.text for c, p in zip(chunks, places) if p.headings == ("Intro",))
    assert places[0].pages == (1, 1) and places[-1] == placed(spans, text.index("Method"), len(text))
    assert any(p.pages == (1, 2) for p in places)  # the paragraph that ran over the page break
    assert places[-1].headings == ("Method",) and places[-1].pages == (2, 2)
    assert "paragraph more" not in text and "words. more of the same" in text.replace("  ", " ")


def test_the_cli_ingests_a_pdf_and_its_answer_cites_the_page(tmp_path: Any) -> None:
    from tests.test_cli import cli

    (tmp_path / "report.pdf").write_bytes(REPORT_PDF)
    ingested = cli(tmp_path / "data", "ingest", str(tmp_path / "report.pdf"))
    assert ingested.returncode == 0, ingested.stderr
    question = "Where does the fund plan a hydrogen plant?"
    asked = cli(tmp_path / "data", "ask", question, "--mode", "document", "--k", "1")
    assert asked.returncode == 0 and "Sources:\n  [1] Annual report 2024, p. 3: Outlook" in asked.stdout, asked.stdout
    listed = cli(tmp_path / "data", "documents").stdout
    assert "report.pdf  (Annual report 2024, application/pdf, 3 pages)" in listed, listed


# -- over HTTP ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    live, stop = start_server(
        tmp_path_factory.mktemp("structured"),
        own_base_iri=True,
        write_tokens=[ADMIN],
        collection_tokens={OTHER_READER: ["read:other"]},
        answer_rate=0,
    )
    with live.client(ADMIN) as admin:
        assert admin.post("/api/v1/collections", json={"name": "other"}).status_code == 201
        files = [
            ("file", ("report.pdf", REPORT_PDF, "application/pdf")),
            ("file", ("news.html", NEWS_PAGE, "text/html")),
            ("file", ("memo.docx", MEMO_DOCX, DOCX)),
        ]
        uploaded = admin.post("/api/v1/documents", files=files)
        assert uploaded.status_code == 201, uploaded.text
    yield live
    stop()


def _select(client: httpx.Client, query: str) -> list[dict[str, str]]:
    answer = client.post(
        "/sparql", data={"query": PREFIXES + query}, headers={"Accept": "application/sparql-results+json"}
    )
    assert answer.status_code == 200, answer.text
    return [{k: v["value"] for k, v in row.items()} for row in answer.json()["results"]["bindings"]]


def test_chunks_carry_pages_and_heading_paths(admin: httpx.Client) -> None:
    rows = _select(
        admin,
        """SELECT ?title ?first ?last ?heading ?pages WHERE { GRAPH ?g { ?doc dcterms:title ?title .
          OPTIONAL { ?doc bibo:numPages ?pages }
          ?chunk prov:wasDerivedFrom ?doc ; a sr:Chunk ; sr:headingPath ?heading
          OPTIONAL { ?chunk bibo:pageStart ?first ; bibo:pageEnd ?last } } }""",
    )
    seen = {(r["title"], r.get("first"), r.get("last"), r["heading"], r.get("pages")) for r in rows}
    assert ("Annual report 2024", "3", "3", "Outlook", "3") in seen
    assert ("Annual report 2024", "1", "1", "Funding > Wind projects", "3") in seen
    assert ("Wind power in the Nordics", None, None, "Wind power in the Nordics > Projects > Offshore", None) in seen
    assert ("Board memo", None, None, "Decisions > Budget", None) in seen
    texts = " ".join(r["text"] for r in _select(admin, "SELECT ?text WHERE { GRAPH ?g { ?c sr:text ?text } }"))
    assert RUNNING_HEADER not in texts and "Copyright" not in texts and "CONFIDENTIAL" not in texts


def test_a_facts_provenance_reaches_its_page_in_sparql_and_in_the_rdf11_dump(admin: httpx.Client) -> None:
    query = """SELECT DISTINCT ?page ?title WHERE { GRAPH ?g {
      ?st rdf:reifies <<( ?s ?p ?o )>> ; prov:wasDerivedFrom ?chunk .
      ?chunk bibo:pageStart ?page ; prov:wasDerivedFrom ?doc . ?doc dcterms:title ?title }
      GRAPH ?k { ?s ?p ?o . ?s <http://www.w3.org/2000/01/rdf-schema#label> "Statkraft" } }"""
    assert {(r["page"], r["title"]) for r in _select(admin, query)} == {("3", "Annual report 2024")}
    dump = admin.get("/store?reification=rdf11", headers={"Accept": "application/n-quads"})
    assert dump.status_code == 200
    dataset = rdflib.Dataset()
    dataset.parse(data=dump.text, format="nquads")
    rdf11 = (
        PREFIXES
        + """SELECT DISTINCT ?page ?title WHERE { GRAPH ?g {
      ?st rdf:subject ?s ; rdf:predicate ?p ; rdf:object ?o ; prov:wasDerivedFrom ?chunk .
      ?chunk bibo:pageStart ?page ; prov:wasDerivedFrom ?doc . ?doc dcterms:title ?title }
      GRAPH ?k { ?s ?p ?o . ?s <http://www.w3.org/2000/01/rdf-schema#label> "Statkraft" } }"""
    )
    rows = [row for row in dataset.query(rdf11) if isinstance(row, rdflib.query.ResultRow)]
    assert {(str(row.page), str(row.title)) for row in rows} == {("3", "Annual report 2024")}


def test_answers_cite_the_page(admin: httpx.Client) -> None:
    asked = admin.post("/api/v1/document-rag", json={"question": "Where does the fund plan a hydrogen plant?", "k": 1})
    assert asked.status_code == 200, asked.text
    (source,) = asked.json()["sources"]
    extracted = admin.post(
        "/api/v1/document-rag", json={"question": "Where does the fund plan a hydrogen plant?", "k": 1}
    )
    answer = extracted.json()["answer"]  # offline: the passages' sentences closest to the question
    assert "Tromso" in answer and not any(f"{heading} [" in answer for heading, *_ in REPORT), answer  # no heading
    assert answer.count("It is described in this report") <= 1  # nor one sentence twice
    assert source["citation"] == "Annual report 2024, p. 3" and source["pages"] == [3, 3]
    assert source["headings"] == "Outlook" and source["file"].endswith("/file/doc/default/report.pdf#page=3")
    graph = admin.post("/api/v1/graph-rag", json={"question": "Who runs the Hywind farm?"})
    assert graph.status_code == 200, graph.text
    citations = [s["citation"] for s in graph.json()["sources"]]
    assert "Annual report 2024, p. 1" in citations, citations
    trace = admin.get(graph.json()["trace"].replace("/trace/", "/page/trace/"))
    assert trace.status_code == 200 and "Annual report 2024, p. 1" in trace.text


def test_the_original_file_comes_back_byte_for_byte(server: LiveServer, admin: httpx.Client) -> None:
    iri = "/doc/default/report.pdf"
    negotiated = admin.get(iri, headers={"Accept": "application/pdf"})
    assert negotiated.status_code == 303 and negotiated.headers["location"].endswith("file/doc/default/report.pdf")
    assert admin.get(iri, headers={"Accept": "*/*"}).headers["location"].endswith(".ttl")  # RDF stays the default
    pdf = admin.get("/file/doc/default/report.pdf")
    assert pdf.status_code == 200 and pdf.content == REPORT_PDF
    assert pdf.headers["content-type"] == PDF and pdf.headers["content-disposition"].startswith("inline")
    page = admin.get("/file/doc/default/news.html")
    assert page.content == NEWS_PAGE and page.headers["content-disposition"].startswith("attachment")
    assert page.headers["content-security-policy"].startswith("sandbox") and page.headers["x-content-type-options"]
    assert admin.get("/file/doc/default/memo.docx").content == MEMO_DOCX
    for missing in (
        "/file/doc/default/nothing.pdf",
        "/file/doc/default/report.pdf/chunk/x",
        "/file/id/default/x",
        "/file/doc/%2e%2e/default/report.pdf",
        "/file/doc/..%2Fdefault/report.pdf",
        "/file/doc/no-such-collection/report.pdf",
        "/file/doc/default/report.pdf%00.txt",
    ):
        answer = admin.get(missing)
        assert answer.status_code == 404 and "Traceback" not in answer.text, missing
    with server.client(OTHER_READER) as reader:
        refused = reader.get("/file/doc/default/report.pdf")
        assert refused.status_code == 403 and refused.content != REPORT_PDF
        assert reader.get(iri, headers={"Accept": "application/pdf"}).status_code == 403
    with server.client() as anonymous:
        assert anonymous.get("/file/doc/default/report.pdf").status_code == 401


def test_a_broken_or_oversized_file_is_refused_and_the_store_left_as_it_was(server: LiveServer) -> None:
    broken = bytearray(MEMO_DOCX)
    broken[len(broken) // 3 : len(broken) // 3 + 64] = bytes(64)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("word/document.xml", "w") as f:
        for _ in range(DecodeLimits().unpacked_bytes // (1 << 20) + 1):
            f.write(bytes(1 << 20))
    before = server.dataset(ADMIN)
    with server.client(ADMIN) as admin:
        for name, data, kind in [
            ("broken.docx", bytes(broken), DOCX),
            ("bomb.docx", bomb.getvalue(), DOCX),
            ("broken.pdf", REPORT_PDF[: len(REPORT_PDF) // 2], PDF),
            ("page.html", b"<html><body><nav>only a menu</nav></body></html>", HTML),
        ]:
            refused = admin.post("/api/v1/documents", files=[("file", (name, data, kind))])
            expected = "decode_failed" if name == "bomb.docx" else "bad_document"  # (a limit, named)
            assert refused.status_code == 400 and refused.json()["error"] == expected, (name, refused.text)
            assert "Traceback" not in refused.text and "zlib" not in refused.text
    assert server.dataset(ADMIN) == before


def test_a_document_a_client_gave_two_counts_is_listed_once(admin: httpx.Client) -> None:
    """The source graph is writable by clients: a second sr:facts neither repeats the document
    in the listing nor doubles its chunks."""
    before = {d["id"]: d for d in admin.get("/api/v1/documents").json()["documents"]}
    doc = admin.base_url.join("/doc/default/memo.docx")
    added = admin.post(
        "/sparql",
        data={
            "update": PREFIXES
            + f"INSERT {{ GRAPH ?g {{ <{doc}> sr:facts 999 }} }} WHERE {{ GRAPH ?g {{ <{doc}> sr:facts ?n }} }}"
        },
    )
    assert added.status_code == 204, added.text
    listed = [d for d in admin.get("/api/v1/documents").json()["documents"] if d["id"] == "memo.docx"]
    assert len(listed) == 1 and listed[0]["chunks"] == before["memo.docx"]["chunks"]
    assert listed[0]["facts"] in (999, before["memo.docx"]["facts"])


def test_reingesting_an_old_document_picks_up_its_pages(admin: httpx.Client) -> None:
    """A document ingested before pages were recorded: its chunks lose them here, as it was."""
    pages = "SELECT ?c WHERE { GRAPH ?g { ?c bibo:pageStart ?p ; prov:wasDerivedFrom <%s> } }"
    doc = admin.base_url.join("/doc/default/report.pdf")
    cleared = admin.post(
        "/sparql",
        data={"update": PREFIXES + "DELETE WHERE { GRAPH ?g { ?c bibo:pageStart ?a ; bibo:pageEnd ?b } }"},
    )
    assert cleared.status_code == 204 and not _select(admin, pages % doc)
    again = admin.post("/api/v1/documents/report.pdf/reingest")
    assert again.status_code in (200, 201), again.text
    assert len(_select(admin, pages % doc)) >= 5
