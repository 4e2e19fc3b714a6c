"""LLM extraction through the real anthropic client and the Messages API stub."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from sparqlrag.config import Settings
from sparqlrag.extraction.knowledge import Entity, Fact
from sparqlrag.extraction.llm_extractor import LLMExtractor
from sparqlrag.models.llm import AnthropicModel
from sparqlrag.services import Services
from sparqlrag.store import EmbeddedStore
from sparqlrag.store.select import select
from sparqlrag.store.vocab import SPARQL_PREFIXES
from tests.llm_stub import Reply, serve_stub


def test_definitions_and_relationships_become_knowledge() -> None:
    stub, stop = serve_stub()
    try:
        stub.script(
            Reply(
                '```json\n[{"entity": "Marie Curie", "definition": "A physicist and chemist."}, {"entity": ""}]\n```'
            ),
            Reply(
                '[{"subject": "Marie Curie", "predicate": "Was born in", "object": "Warsaw", "object-entity": true},'
                ' {"subject": "Marie Curie", "predicate": "won", "object": "two Nobel Prizes", "object-entity": false},'
                ' {"subject": "Marie'
            ),  # truncated output: the complete items still count
        )
        extractor = LLMExtractor(AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url))
        knowledge = asyncio.run(extractor.extract("Marie Curie was born in Warsaw. She won two Nobel Prizes."))
    finally:
        stop()
    assert knowledge.entities == [Entity("Marie Curie", "A physicist and chemist."), Entity("Warsaw")]
    assert knowledge.facts == [
        Fact("Marie Curie", "was born in", "Warsaw", True),
        Fact("Marie Curie", "won", "two Nobel Prizes", False),
    ]
    assert knowledge.rejected == 1
    assert extractor.llm_name == "anthropic:claude-test"
    prompts = [r["messages"][0]["content"] for r in stub.requests]
    assert "definition" in prompts[0] and "object-entity" in prompts[1]
    assert all("Marie Curie was born in Warsaw." in p for p in prompts)


def test_aliases_the_llm_reads_in_the_text_join_their_entity_where_they_pass_the_checks(tmp_path: Path) -> None:
    """The LLM's aliases go through resolution's checks: written in the text, an acronym that
    spells its name; a made-up one is dropped."""
    stub, stop = serve_stub()
    text = "International Business Machines, called Big Blue by the press, is based in Armonk. IBM makes servers."
    definitions = json.dumps(
        [
            {
                "entity": "International Business Machines",
                "definition": "A computer company.",
                "aliases": ["Big Blue", "IBM", "Blue Giant", "IBX", 7],
            },
            {"entity": "Armonk", "definition": "A town."},
        ]
    )
    store = EmbeddedStore(tmp_path / "store")
    try:
        stub.script(
            Reply(definitions),
            Reply('[{"subject": "IBM", "predicate": "makes", "object": "servers", "object-entity": false}]'),
        )
        llm = AnthropicModel("claude-test", api_key="sk-test", base_url=stub.url)
        services = Services.open(
            Settings(data_dir=tmp_path, base_iri="http://kb.example/", reranker_model=None), store, LLMExtractor(llm)
        )
        asyncio.run(services.pipeline.ingest(services.collections.iris("default"), "ibm", text.encode()))
        services.close()
    finally:
        stop()
    ibm = "http://kb.example/id/default/international-business-machines"
    rows = select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT ?alias ?rule WHERE {{ GRAPH <http://kb.example/graph/default/source> {{
        ?m rdf:reifies <<( ?a owl:sameAs <{ibm}> )>> ; sr:alias ?alias ; sr:rule ?rule }} }}""",
    )
    labels = select(
        store,
        SPARQL_PREFIXES
        + f"SELECT ?l WHERE {{ GRAPH <http://kb.example/graph/default> {{ <{ibm}> skos:altLabel ?l }} }}",
    )
    facts = select(
        store, "SELECT ?s WHERE { GRAPH <http://kb.example/graph/default> { ?s <http://kb.example/rel/makes> ?o } }"
    )
    store.close()
    assert {(r["alias"], r["rule"]) for r in rows} == {
        ("Big Blue", "stated"),
        ("IBM", "acronym"),
    }  # not "Blue Giant", not "IBX"
    assert {r["l"] for r in labels} == {"Big Blue", "IBM"} and facts == [{"s": ibm}]
