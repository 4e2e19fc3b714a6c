"""Ontologies on real parts: files from tests/data/ontologies read by pyoxigraph and owlready2,
kept in a pyoxigraph store on disk, served over real HTTP, and opened by the OWL API (what
Protégé uses) from the running server's URL."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import rdflib
from pyoxigraph import RdfFormat, parse, serialize

from sparqlrag.models.embedder import Embedder
from sparqlrag.ontology.owl import OntologyError, OntologyModel, owlready
from sparqlrag.ontology.reading import OWL_XML, detect_format, read_ontology
from sparqlrag.ontology.registry import Ontologies, OntologyConflict, UnknownOntology
from sparqlrag.ontology.selection import ElementIndex, Selector, candidate_phrases, element_text, gist, stems
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.vocab import InvalidName, local_name
from tests.conftest import ROOT, SPARQLRAG, TEST_DATA, LiveServer, start_server

ONTOLOGIES = TEST_DATA / "ontologies"
FOAF, ORG, SCHEMA = "http://xmlns.com/foaf/0.1/", "http://www.w3.org/ns/org#", "http://schema.org/"
PETS = b"""@prefix owl: <http://www.w3.org/2002/07/owl#> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix pets: <http://example.org/pets#> .
pets:Animal a owl:Class ; rdfs:label "Animal" .
pets:Dog a owl:Class ; rdfs:label "Dog" ; rdfs:subClassOf pets:Animal .
pets:Cat a owl:Class ; rdfs:label "Cat" ; rdfs:subClassOf pets:Animal .
pets:Person a owl:Class ; rdfs:label "Person" .
pets:owns a owl:ObjectProperty ; rdfs:domain pets:Person ; rdfs:range pets:Animal ; owl:inverseOf pets:ownedBy .
pets:ownedBy a owl:ObjectProperty .
"""  # no owl:Ontology: it gets {base}ontology/{name}
OWL_XML_DOC = b"""<?xml version="1.0"?>
<Ontology xmlns="http://www.w3.org/2002/07/owl#" ontologyIRI="http://example.org/zoo">
  <Declaration><Class IRI="http://example.org/zoo#Keeper"/></Declaration>
  <Declaration><Class IRI="http://example.org/zoo#Enclosure"/></Declaration>
  <Declaration><ObjectProperty IRI="http://example.org/zoo#tends"/></Declaration>
  <ObjectPropertyDomain><ObjectProperty IRI="http://example.org/zoo#tends"/><Class IRI="http://example.org/zoo#Keeper"/></ObjectPropertyDomain>
  <ObjectPropertyRange><ObjectProperty IRI="http://example.org/zoo#tends"/><Class IRI="http://example.org/zoo#Enclosure"/></ObjectPropertyRange>
</Ontology>
"""
BASE = "http://kb.example/"


def converted(name: str, fmt: RdfFormat) -> bytes:
    """A Turtle ontology of tests/data in another RDF syntax (pyoxigraph's serializer)."""
    triples = [q.triple for q in parse((ONTOLOGIES / f"{name}.ttl").read_bytes(), format=RdfFormat.TURTLE)]
    data = serialize(triples, format=fmt)
    assert data is not None  # (no output file given: the bytes come back)
    return data


@pytest.fixture
def ontologies(tmp_path: Path) -> Iterator[Ontologies]:
    store = EmbeddedStore(tmp_path / "store")
    yield Ontologies(store, BASE)
    store.close()


def dataset(ontologies: Ontologies, folder: Path) -> bytes:
    ontologies.store.dump(folder / "dump.nq", RdfFormat.N_QUADS)
    return (folder / "dump.nq").read_bytes()


@pytest.mark.parametrize(
    ("fmt", "data", "filename", "iri"),
    [
        ("turtle", (ONTOLOGIES / "foaf.ttl").read_bytes(), "foaf.ttl", FOAF),
        ("ntriples", converted("org", RdfFormat.N_TRIPLES), "org.nt", ORG),
        ("rdfxml", converted("foaf", RdfFormat.RDF_XML), "foaf.rdf", FOAF),
        ("rdfxml-sniffed", converted("org", RdfFormat.RDF_XML), "org.owl", ORG),
        (
            "turtle-schema",
            (ONTOLOGIES / "schemaorg_subset.ttl").read_bytes(),
            "schema.ttl",
            BASE + "ontology/x",
        ),  # declares no IRI
        ("jsonld", converted("schemaorg_subset", RdfFormat.JSON_LD), "schema.jsonld", BASE + "ontology/x"),
        ("owlxml", OWL_XML_DOC, "zoo.owx", "http://example.org/zoo"),
        ("owlxml-sniffed", OWL_XML_DOC, None, "http://example.org/zoo"),
    ],
)
def test_each_format_loads_into_its_own_graph(
    ontologies: Ontologies, fmt: str, data: bytes, filename: str | None, iri: str
) -> None:
    result = ontologies.load_sync("x", data, filename=filename)
    assert result.info.iri == iri and not result.replaced and result.info.classes >= 2
    stored = ontologies.store.serialize_graph(iri, RdfFormat.N_TRIPLES)
    assert len(rdflib.Graph().parse(data=stored, format="nt")) == result.info.triples > 0
    assert [info.name for info in ontologies.list_sync()] == ["x"]


def test_the_format_comes_from_media_type_file_name_or_content() -> None:
    rdfxml = converted("org", RdfFormat.RDF_XML)
    assert detect_format(rdfxml, "application/rdf+xml") == RdfFormat.RDF_XML
    assert detect_format(OWL_XML_DOC, None, "zoo.owx") == OWL_XML
    assert detect_format(rdfxml, None, "org.owl") == RdfFormat.RDF_XML
    assert detect_format(OWL_XML_DOC, None, "zoo.owl") == OWL_XML
    assert detect_format(b'{"@context": {}}') == RdfFormat.JSON_LD
    assert detect_format(b"<http://a> <http://b> <http://c> .") == RdfFormat.TURTLE


def test_the_model_has_hierarchy_domain_range_inverse_and_cardinality() -> None:
    def model(name: str, iri: str):
        return owlready.model(iri, read_ontology((ONTOLOGIES / f"{name}.ttl").read_bytes(), filename=f"{name}.ttl"))

    foaf = model("foaf", FOAF)
    assert FOAF + "Agent" in foaf.classes[FOAF + "Person"].parents and foaf.is_a(FOAF + "Person", [FOAF + "Agent"])
    assert not foaf.is_a(FOAF + "Document", [FOAF + "Agent"])
    org = model("org", ORG)
    member_of = org.properties[ORG + "memberOf"]
    assert (
        member_of.kind == "object"
        and member_of.domain == (FOAF + "Agent",)
        and member_of.range == (ORG + "Organization",)
    )
    assert member_of.inverse == ORG + "hasMember" and org.properties[ORG + "hasMember"].inverse == ORG + "memberOf"
    assert org.properties[ORG + "location"].kind == "datatype"  # its range is xsd:string
    schema = model("schemaorg_subset", SCHEMA)  # RDFS style: rdfs:Class, rdf:Property, domainIncludes
    author = schema.properties[SCHEMA + "author"]
    assert author.domain == (SCHEMA + "CreativeWork",) and set(author.range) == {
        SCHEMA + "Organization",
        SCHEMA + "Person",
    }
    assert schema.is_a(SCHEMA + "City", [SCHEMA + "Place"]) and schema.classes[SCHEMA + "City"].label == "City"
    time = model("time", "http://www.w3.org/2006/time")
    exact = {(c.owner.rsplit("#")[-1], c.property.rsplit("#")[-1], c.minimum, c.maximum) for c in time.cardinalities}
    assert {
        ("Duration", "unitType", 1, 1),
        ("GeneralDateTimeDescription", "hour", None, 1),
    } <= exact  # exactly 1; at most 1


def test_reloading_a_changed_ontology_replaces_it_whole(ontologies: Ontologies) -> None:
    first = ontologies.load_sync("pets", PETS, filename="pets.ttl")
    assert first.info.iri == BASE + "ontology/pets" and first.info.classes == 4
    again = ontologies.load_sync("pets", PETS, filename="pets.ttl")
    assert again.unchanged and again.info == first.info
    changed = PETS.replace(b'pets:Cat a owl:Class ; rdfs:label "Cat" ; rdfs:subClassOf pets:Animal .\n', b"")
    second = ontologies.load_sync("pets", changed, filename="pets.ttl")
    assert second.replaced and second.info.classes == 3
    stored = ontologies.store.serialize_graph(second.info.iri, RdfFormat.N_TRIPLES)
    assert b"pets#Cat" not in stored and b"pets#Dog" in stored
    assert ontologies.model_sync("pets").classes.keys() == {
        f"http://example.org/pets#{c}" for c in ("Animal", "Dog", "Person")
    }
    assert len(ontologies.list_sync()) == 1


@pytest.mark.parametrize(
    ("data", "name", "error", "message"),
    [
        (
            b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description',
            "bad",
            OntologyError,
            "not valid RDF/XML: syntax error",
        ),
        (b"@prefix ex: <http://ex/> . ex:a ex:b", "bad", OntologyError, "not valid Turtle"),
        (b'<Ontology xmlns="http://www.w3.org/2002/07/owl#"><Declaration>', "bad", OntologyError, "OWL/XML"),
        (b"<http://ex/a> <http://ex/b> <http://ex/c> .", "noclasses", OntologyError, "no classes"),
        (PETS, "Bad Name", InvalidName, "ontology names"),
        (converted("org", RdfFormat.TURTLE), "foaf", OntologyConflict, "holds another ontology"),  # a name clash
        (
            (ONTOLOGIES / "foaf.ttl").read_bytes(),
            "foaf2",
            OntologyConflict,
            "under the name 'foaf'",
        ),  # the IRI is taken
        (
            b"<http://kb.example/graph/default> a <http://www.w3.org/2002/07/owl#Ontology> . <http://ex/A> a "
            b"<http://www.w3.org/2002/07/owl#Class> .",
            "sneaky",
            OntologyError,
            "under this server.s base IRI",
        ),
    ],
)
def test_bad_ontologies_are_refused_and_change_nothing(
    ontologies: Ontologies, tmp_path: Path, data: bytes, name: str, error: type[Exception], message: str
) -> None:
    ontologies.load_sync("foaf", (ONTOLOGIES / "foaf.ttl").read_bytes(), filename="foaf.ttl")
    before = dataset(ontologies, tmp_path)
    with pytest.raises(error, match=message):
        ontologies.load_sync(name, data)
    assert dataset(ontologies, tmp_path) == before
    with pytest.raises(UnknownOntology):
        ontologies.remove_sync("nothing")


def test_a_graph_of_other_data_is_never_overwritten(ontologies: Ontologies, tmp_path: Path) -> None:
    ontologies.store.update(f"INSERT DATA {{ GRAPH <{FOAF}> {{ <http://ex/mine> <http://ex/p> 'kept' }} }}")
    before = dataset(ontologies, tmp_path)
    with pytest.raises(OntologyConflict, match="holds other data"):
        ontologies.load_sync("foaf", (ONTOLOGIES / "foaf.ttl").read_bytes(), filename="foaf.ttl")
    assert dataset(ontologies, tmp_path) == before


# -- over HTTP ----------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LiveServer]:
    """A server of the test's own (what one test loads, no other sees); its base IRI is its own
    URL, so that an ontology IRI under it can be fetched."""
    live, stop = start_server(tmp_path / "data", own_base_iri=True, max_ontology_bytes=2 * 1024 * 1024)
    yield live
    stop()


def test_http_load_list_negotiate_and_remove(server: LiveServer) -> None:
    with server.client() as client:
        files = {"file": ("foaf.ttl", (ONTOLOGIES / "foaf.ttl").read_bytes(), "text/turtle")}
        created = client.post("/api/v1/ontologies", files=files)
        assert (
            created.status_code == 201
            and created.json()["iri"] == FOAF
            and created.headers["location"] == "/api/v1/ontologies/foaf"
        )
        rdfxml = converted("org", RdfFormat.RDF_XML)
        put = client.put("/api/v1/ontologies/org", content=rdfxml, headers={"Content-Type": "application/rdf+xml"})
        assert put.status_code == 201 and put.json()["classes"] == 15
        assert client.put("/api/v1/ontologies/org", content=rdfxml).json()["unchanged"] is True
        listed = client.get("/api/v1/ontologies").json()["ontologies"]
        assert [(o["name"], o["iri"]) for o in listed] == [("foaf", FOAF), ("org", ORG)]
        default = client.get("/api/v1/ontologies/org")  # no Accept: RDF/XML, what the OWL API reads
        assert default.headers["content-type"].startswith("application/rdf+xml") and "Accept" in default.headers["vary"]
        assert len(rdflib.Graph().parse(data=default.content, format="xml")) == put.json()["triples"]
        for accept, rdflib_format in (
            ("text/turtle", "turtle"),
            ("application/n-triples", "nt"),
            ("application/ld+json", "json-ld"),
        ):
            response = client.get("/api/v1/ontologies/org", headers={"Accept": accept})
            assert response.headers["content-type"].startswith(accept) and response.headers["vary"].startswith("Accept")
            assert len(rdflib.Graph().parse(data=response.content, format=rdflib_format)) == put.json()["triples"]
        turtle = client.get(
            "/api/v1/ontologies/foaf", headers={"Accept": "text/turtle"}
        ).text  # with the file's own prefixes
        assert f"@prefix foaf: <{FOAF}> ." in turtle and "\nfoaf:Person " in turtle and "prefixes" not in created.json()
        assert 'xmlns:foaf="http://xmlns.com/foaf/0.1/"' in client.get("/api/v1/ontologies/foaf").text
        refused = client.get("/api/v1/ontologies/org", headers={"Accept": "image/png"})
        assert refused.status_code == 406 and "application/rdf+xml" in refused.json()["detail"]
        # OWL/XML is read, not written: asked for it alone, a 406; beside RDF/XML, RDF/XML under its own name
        owl_only = client.get("/api/v1/ontologies/org", headers={"Accept": "application/owl+xml"})
        assert owl_only.status_code == 406 and "application/rdf+xml" in owl_only.json()["detail"]
        owl_first = client.get(
            "/api/v1/ontologies/org", headers={"Accept": "application/owl+xml, application/rdf+xml;q=0.8"}
        )
        assert owl_first.status_code == 200 and owl_first.headers["content-type"].startswith("application/rdf+xml")
        assert client.delete("/api/v1/ontologies/org").status_code == 204
        assert client.get("/api/v1/ontologies/org").json()["error"] == "ontology_not_found"
        assert client.delete("/api/v1/ontologies/org").status_code == 404


def test_an_ontology_iri_under_the_base_is_served_there(server: LiveServer) -> None:
    with server.client() as client:
        loaded = client.post("/api/v1/ontologies?name=pets", content=PETS, headers={"Content-Type": "text/turtle"})
        assert loaded.status_code == 201 and loaded.json()["iri"] == server.url + "/ontology/pets"
        page = client.get("/ontology/pets", headers={"Accept": "text/turtle"})
        assert (
            page.status_code == 200
            and b"@prefix pets: <http://example.org/pets#> ." in page.content
            and b"\npets:Dog " in page.content
        )
        assert client.get("/ontology/nothing").json()["error"] == "not_found"
        assert client.post("/ontology/pets").status_code in (404, 405)


def test_http_bad_inputs_are_4xx_and_change_nothing(server: LiveServer) -> None:
    with server.client() as client:
        foaf = (ONTOLOGIES / "foaf.ttl").read_bytes()  # the name the conflict case tries to take
        assert client.put("/api/v1/ontologies/foaf", content=foaf, headers={"Content-Type": "text/turtle"}).is_success
        before = client.get("/store", headers={"Accept": "application/n-quads"}).text
        cases = [
            (
                client.post(
                    "/api/v1/ontologies?name=bad",
                    content=b"<rdf:RDF xmlns:rdf='x'><oops",
                    headers={"Content-Type": "application/rdf+xml"},
                ),
                400,
                "bad_ontology",
            ),
            (
                client.post(
                    "/api/v1/ontologies?name=empty",
                    content=b"<http://ex/a> <http://ex/b> <http://ex/c> .",
                    headers={"Content-Type": "application/n-triples"},
                ),
                400,
                "bad_ontology",
            ),
            (
                client.put(
                    "/api/v1/ontologies/foaf",
                    content=converted("org", RdfFormat.TURTLE),
                    headers={"Content-Type": "text/turtle"},
                ),
                409,
                "ontology_conflict",
            ),
            (
                client.put("/api/v1/ontologies/Not%20OK", content=PETS, headers={"Content-Type": "text/turtle"}),
                400,
                "bad_name",
            ),
            (
                client.post("/api/v1/ontologies", content=PETS, headers={"Content-Type": "text/turtle"}),
                400,
                "bad_request",
            ),
            (
                client.post(
                    "/api/v1/ontologies?name=huge",
                    content=b"#" * (3 * 1024 * 1024),
                    headers={"Content-Type": "text/turtle"},
                ),
                413,
                "body_too_large",
            ),
            (
                client.post(
                    "/api/v1/ontologies?name=huge",
                    files={"file": ("huge.ttl", b"#" * (3 * 1024 * 1024), "text/turtle")},
                ),
                413,
                "body_too_large",
            ),
        ]
        for response, status, error in cases:
            assert (response.status_code, response.json()["error"]) == (status, error), response.text
        assert client.get("/store", headers={"Accept": "application/n-quads"}).text == before


def test_replace_lets_a_name_take_another_ontology(server: LiveServer) -> None:
    with server.client() as client:
        files = {"file": ("first.ttl", PETS, "text/turtle")}
        assert client.post("/api/v1/ontologies", files=files, data={"name": "swap"}).status_code == 201
        zoo = {"Content-Type": "application/owl+xml"}
        assert client.put("/api/v1/ontologies/swap", content=OWL_XML_DOC, headers=zoo).status_code == 409
        replaced = client.put("/api/v1/ontologies/swap?replace=true", content=OWL_XML_DOC, headers=zoo)
        assert (
            replaced.status_code == 200
            and replaced.json()["replaced"]
            and replaced.json()["iri"] == "http://example.org/zoo"
        )
        graphs = client.get(
            "/sparql",
            params={"query": "SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }"},
            headers={"Accept": "application/sparql-results+json"},
        ).json()["results"]["bindings"]
        names = {b["g"]["value"] for b in graphs}
        assert (
            "http://example.org/zoo" in names and server.url + "/ontology/swap" not in names
        )  # the old graph went with it
        assert client.delete("/api/v1/ontologies/swap").status_code == 204


def test_a_collection_created_with_an_ontology_holds_it(server: LiveServer) -> None:
    with server.client() as client:
        client.put("/api/v1/ontologies/pets", content=PETS, headers={"Content-Type": "text/turtle"})
        unknown = client.post("/api/v1/collections", json={"name": "zoo", "ontology": "nothing"})
        assert unknown.status_code == 400 and unknown.json()["error"] == "unknown_ontology"
        assert client.post("/api/v1/collections", json={"name": "zoo", "ontology": 7}).status_code == 400
        assert client.get("/api/v1/collections/zoo").status_code == 404  # nothing was created
        created = client.post("/api/v1/collections", json={"name": "zoo", "ontology": "pets"})
        assert created.status_code == 201 and created.json()["ontology"] == "pets"
        in_use = client.delete("/api/v1/ontologies/pets")
        assert in_use.status_code == 409 and in_use.json()["error"] == "ontology_in_use"
        assert client.delete("/api/v1/collections/zoo").status_code == 204
        assert client.delete("/api/v1/ontologies/pets").status_code == 204


def test_a_50_mb_upload_is_refused_under_the_default_limit(tmp_path: Path) -> None:
    live, stop = start_server(tmp_path / "data")
    try:
        with live.client() as client:
            response = client.post(
                "/api/v1/ontologies?name=big",
                content=b"#" * (50 * 1024 * 1024),
                headers={"Content-Type": "text/turtle"},
            )
            assert response.status_code == 413 and "33554432 byte limit" in response.json()["detail"]
            assert client.get("/api/v1/ontologies").json()["ontologies"] == []
    finally:
        stop()


@pytest.mark.skipif(
    not Path("/usr/share/java/owlapi-distribution.jar").exists() or not shutil.which("java"),
    reason="the OWL API (Debian libowlapi-java) and java are installed by `make install`",
)
def test_the_owl_api_loads_ontologies_from_the_running_server(server: LiveServer) -> None:
    with server.client() as client:
        client.post("/api/v1/ontologies?name=pets", content=PETS, headers={"Content-Type": "text/turtle"})
        client.put("/api/v1/ontologies/zoo", content=OWL_XML_DOC, headers={"Content-Type": "application/owl+xml"})
        client.put(
            "/api/v1/ontologies/foaf",
            content=(ONTOLOGIES / "foaf.ttl").read_bytes(),
            headers={"Content-Type": "text/turtle"},
        )
    urls = [
        server.url + "/ontology/pets",
        server.url + "/api/v1/ontologies/zoo",
        server.url + "/api/v1/ontologies/foaf",
    ]
    run = subprocess.run(
        ["java", "-cp", "/usr/share/java/*", str(ROOT / "tests" / "java" / "OwlClassCount.java"), *urls],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    counts = [line.split(" ", 1) for line in run.stdout.splitlines()]
    assert counts[0] == ["4", server.url + "/ontology/pets"]
    assert counts[1] == ["2", "http://example.org/zoo"]
    declared = {
        s
        for t in ("Class", "")
        for s in rdflib.Graph()
        .parse(ONTOLOGIES / "foaf.ttl")
        .subjects(rdflib.RDF.type, rdflib.OWL.Class if t else rdflib.RDFS.Class)
    }
    assert counts[2][1] == FOAF and int(counts[2][0]) >= len(declared) == 13


def test_cli_load_list_show_remove(tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SPARQLRAG, "ontology", *args, "--data-dir", str(tmp_path / "data")], capture_output=True, text=True
        )

    loaded = cli("load", str(ONTOLOGIES / "org.ttl"))
    assert loaded.returncode == 0 and loaded.stdout.startswith(f"loaded org: {ORG} (15 classes")
    assert cli("load", str(ONTOLOGIES / "org.ttl")).stdout.startswith("unchanged org")
    clash = cli("load", str(ONTOLOGIES / "foaf.ttl"), "--name", "org")
    assert clash.returncode == 2 and "holds another ontology" in clash.stderr and "Traceback" not in clash.stderr
    assert cli("list").stdout.split()[:3] == ["org", "15", "classes"]
    shown = cli("show", "org").stdout
    assert f"{ORG}memberOf  (object) {FOAF}Agent -> {ORG}Organization" in shown
    assert "\norg:memberOf " in cli("show", "org", "--format", "turtle").stdout  # prefixed as in the file
    missing = cli("show", "nothing")
    assert missing.returncode == 2 and "no ontology is loaded under the name 'nothing'" in missing.stderr
    bad = tmp_path / "bad.rdf"
    bad.write_text("<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'><oops")
    refused = cli("load", str(bad))
    assert refused.returncode == 2 and "not valid RDF/XML" in refused.stderr

    def collections(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SPARQLRAG, "collections", *args, "--data-dir", str(tmp_path / "data")], capture_output=True, text=True
        )

    unknown = collections("create", "hr", "--ontology", "nothing")
    assert unknown.returncode == 2 and "no ontology is loaded under the name 'nothing'" in unknown.stderr
    assert collections("create", "hr", "--ontology", "org").stdout.strip() == "created hr"
    in_use = cli("remove", "org")
    assert in_use.returncode == 2 and "'hr' extracts with ontology 'org'" in in_use.stderr
    assert collections("delete", "hr").returncode == 0
    assert cli("remove", "org").stdout.strip() == "removed org" and cli("list").stdout == ""


# -- selection ----------------------------------------------------------------------------------


def shared_model(name: str, iri: str) -> OntologyModel:
    return owlready.model(iri, read_ontology((ONTOLOGIES / f"{name}.ttl").read_bytes(), filename=f"{name}.ttl"))


@pytest.mark.parametrize(
    ("name", "iri", "sentence", "expected"),
    [
        (
            "foaf",
            FOAF,
            "Alice is a person with an online account, and she knows Bob.",
            {"Person", "OnlineAccount", "knows", "Agent"},
        ),  # Agent: Person's parent
        (
            "org",
            ORG,
            "Jane is a member of the finance unit of ACME, a formal organization, where she holds a post.",
            {"Membership", "OrganizationalUnit", "FormalOrganization", "Post", "Organization"},
        ),
        (
            "schemaorg_subset",
            SCHEMA,
            "The book was written by Mark Twain, an author born in a city in Missouri.",
            {"Book", "author", "Person", "City", "CreativeWork"},
        ),
    ],
)
def test_selection_finds_the_classes_a_sentence_is_about(
    embedder: Embedder, name: str, iri: str, sentence: str, expected: set[str]
) -> None:
    selector = Selector(embedder)
    index = ElementIndex(shared_model(name, iri), embedder)
    (subset,) = selector.select(index, [sentence])
    names = {local_name(i) for i in [*subset.classes, *subset.properties]}
    assert expected <= names, expected - names
    assert len(subset.classes) + len(subset.properties) < len(index)  # a subset, not the whole ontology
    assert all(score >= 0.3 for score in subset.scores.values())
    for iri in subset.scores.keys() & subset.properties.keys():  # a selected property comes with its domain and range
        prop = subset.properties[iri]
        assert {c for c in (*prop.domain, *prop.range) if c in index.ontology_model.classes} <= subset.classes.keys()


def test_selection_batches_chunks_and_passes_a_tiny_ontology_whole(embedder: Embedder) -> None:
    selector = Selector(embedder, threshold=0.3, top_k=10)
    index = ElementIndex(shared_model("foaf", FOAF), embedder)
    person, document = selector.select(index, ["Alice is a person.", "The document has a title and a topic."])
    assert FOAF + "Person" in person.scores and FOAF + "Document" in document.scores
    assert FOAF + "Document" not in person.scores
    strict = Selector(embedder, threshold=0.9).select(index, ["It rained all week in the hills."])[0]
    assert strict.scores == {} and strict.classes == {}
    tiny = owlready.model(
        BASE + "ontology/tiny",
        read_ontology(
            b"""@prefix owl: <http://www.w3.org/2002/07/owl#> .
        <http://ex/A> a owl:Class . <http://ex/B> a owl:Class . <http://ex/p> a owl:ObjectProperty .""",
            filename="t.ttl",
        ),
    )
    (whole,) = selector.select(ElementIndex(tiny, embedder), ["Nothing to do with it."])
    assert whole.classes.keys() == {"http://ex/A", "http://ex/B"} and whole.properties.keys() == {"http://ex/p"}


def test_phrases_gists_and_stems() -> None:
    assert candidate_phrases("The Finance Unit of ACME Corporation, in 2020, hired a new chief financial officer.") == [
        "Finance Unit",
        "ACME Corporation",
        "hired",
        "new chief financial",
        "officer",
    ]
    assert (
        gist("The company hired three engineers in the spring of 2020.") == "company hired three engineers spring 2020"
    )
    assert stems("Formal Organizations") == stems("formalOrganization") == {"formal", "organization"}
    assert element_text("Person", FOAF + "Person", "A person. Alive, dead, real, or imaginary.") == "Person: A person."
    assert element_text("member of", ORG + "memberOf", "") == "member of"
    assert element_text("Post", ORG + "Post", "") == "Post"
