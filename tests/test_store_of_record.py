"""The store is the system of record: `sparqlrag reindex` rebuilds the derived indexes from it
alone, as ingest built them, and `sparqlrag dump --rdf11` hands it to tools without RDF 1.2."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import numpy as np
import pytest
import rdflib
from pyoxigraph import RdfFormat, parse

from sparqlrag.config import Settings
from sparqlrag.extraction.plans import Source
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from tests.conftest import SPARQLRAG, start_server

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
PROV_DERIVED = "http://www.w3.org/ns/prov#wasDerivedFrom"
CORPUS = Path(__file__).resolve().parents[1] / "sparqlrag" / "demo" / "corpus"


def indexes(settings: Settings) -> dict[str, object]:
    """Every point of every vector set (sorted by IRI and facet), and
    the keyword index's count and best hits for a few queries."""
    services = Services.open(settings, EmbeddedStore(settings.store_path))
    try:
        return _points(services)
    finally:
        services.close()
        services.store.close()


def _points(services: Services) -> dict[str, object]:
    seen: dict[str, object] = {}
    for kind in ("chunks", "entities", "facts"):
        vectors, payloads = services.vectors.points("default", kind)
        order = sorted(range(len(payloads)), key=lambda i: (payloads[i]["iri"], payloads[i].get("facet", "")))
        seen[kind] = [payloads[i] for i in order]
        seen[kind + " vectors"] = vectors[order]
    seen["keyword rows"] = services.keywords.count("default")
    seen["keyword hits"] = [services.keywords.search("default", q, 5) for q in ("CERN Geneva", "web browser", "W3C")]
    return seen


def ingested(data: Path) -> Settings:
    """The demo corpus ingested offline into `data`, closed again; its settings."""
    data.mkdir()
    settings = Settings(data_dir=data, base_iri="http://kb.example/", reranker_model=None)
    services = Services.open(settings, EmbeddedStore(settings.store_path))
    try:
        sources = [Source(p.name, p.read_bytes()) for p in sorted(CORPUS.glob("*.md"))]
        asyncio.run(services.pipeline.ingest_many(services.collections.iris("default"), sources))
    finally:
        services.close()
        services.store.close()
    return settings


def test_reindex_after_the_vector_folder_is_lost_restores_every_index(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = ingested(data)
    built = indexes(settings)
    assert len(built["chunks"]) >= 5 and len(built["entities"]) > 20 and len(built["facts"]) > 20  # type: ignore[arg-type]
    for lost in data.glob("vectors.sqlite*"):
        lost.unlink()
    (data / "keywords.sqlite").unlink()
    run = [SPARQLRAG, "reindex", "--data-dir", str(data), "--base-iri", "http://kb.example/"]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reindexed collection 'default'" in done.stdout
    rebuilt = indexes(settings)
    for key in built:
        if key.endswith("vectors"):  # the same texts through the same model: the same vectors, to float noise
            assert np.abs(rebuilt[key] - built[key]).max() < 1e-5, (key, np.abs(rebuilt[key] - built[key]).max())  # type: ignore[operator]
        else:
            assert rebuilt[key] == built[key], key


@pytest.mark.filterwarnings("ignore::DeprecationWarning:rdflib")  # rdflib 7 warns about its own Dataset API
def test_an_rdf11_dump_gives_rdflib_every_reifier_with_its_fact_and_chunks(tmp_path: Path) -> None:
    """rdflib cannot read RDF 1.2 triple terms; the RDF 1.1 form of the same dump it reads whole."""
    data = tmp_path / "data"
    ingested(data)
    common = ["--data-dir", str(data), "--base-iri", "http://kb.example/"]
    for name, extra in (("rdf12.nq", ["--format", "nquads"]), ("rdf11.trig", ["--format", "trig", "--rdf11"])):
        done = subprocess.run([SPARQLRAG, "dump", "-o", str(tmp_path / name), *extra, *common], capture_output=True)
        assert done.returncode == 0, done.stderr
    expected = {}  # reifier -> (s, p, o), from the RDF 1.2 dump, read by pyoxigraph
    chunks: dict[str, set[str]] = {}
    for quad in parse(path=str(tmp_path / "rdf12.nq"), format=RdfFormat.N_QUADS):
        if quad.predicate.value == RDF + "reifies":
            fact = quad.object
            expected[quad.subject.value] = (fact.subject.value, fact.predicate.value, fact.object.value)
        elif quad.predicate.value == PROV_DERIVED:
            chunks.setdefault(quad.subject.value, set()).add(quad.object.value)
    assert len(expected) > 50
    with pytest.raises(rdflib.exceptions.ParserError):  # what the issue found: rdflib 7 cannot read the RDF 1.2 form
        rdflib.Dataset().parse(tmp_path / "rdf12.nq", format="nquads")
    server, stop = start_server(data, base_iri="http://kb.example/")  # the same, over the Graph Store Protocol
    try:
        with server.client() as client:
            served = client.get("/store", params={"reification": "rdf11"}, headers={"Accept": "application/trig"})
            source = {"graph": "http://kb.example/graph/default/source", "reification": "rdf11"}
            graph = client.get("/store", params=source, headers={"Accept": "text/turtle"})
            wrong = client.get("/store", params={"reification": "rdf13"})
    finally:
        stop()
    assert served.status_code == graph.status_code == 200 and served.content == (tmp_path / "rdf11.trig").read_bytes()
    assert len(rdflib.Graph().parse(data=graph.content, format="turtle")) > 4 * len(expected)
    assert wrong.status_code == 400 and "rdf11" in wrong.json()["detail"]
    dataset = rdflib.Dataset(default_union=True)
    dataset.parse(tmp_path / "rdf11.trig", format="trig")
    found = {}
    for reifier in expected:
        node = rdflib.URIRef(reifier)
        parts = [
            dataset.value(node, rdflib.URIRef(RDF + name), any=False) for name in ("subject", "predicate", "object")
        ]
        found[reifier] = tuple(str(part) for part in parts)
        derived = {str(o) for _, _, o, _ in dataset.quads((node, rdflib.URIRef(PROV_DERIVED), None, None))}
        assert derived == chunks.get(reifier, set()), reifier
    assert found == expected
    assert not any(
        isinstance(o, rdflib.term.Node) and "<<" in str(o) for _, _, o, _ in dataset.quads((None, None, None, None))
    )
