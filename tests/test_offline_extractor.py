"""The offline extractor on sentences whose right reading is known."""

from __future__ import annotations

import asyncio

import pytest

from sparqlrag.extraction.knowledge import COOCCURS, Fact
from sparqlrag.extraction.offline import OfflineExtractor


@pytest.fixture(scope="module")
def extractor() -> OfflineExtractor:
    return OfflineExtractor()


def triples(facts: list[Fact]) -> set[tuple[str, str, str, bool]]:
    return {(f.subject, f.predicate, f.object, f.object_entity) for f in facts}


def test_names_verb_phrases_and_definitions(extractor: OfflineExtractor) -> None:
    text = (
        "The Journal of Mathematical Physics is a peer-reviewed journal published monthly by the American "
        "Institute of Physics. Marie Curie was born in Warsaw and moved to Paris in 1891. "
        "Dr. Jan P. Solovej from University of Copenhagen edits it. Canberra is the capital of Australia."
    )
    knowledge = asyncio.run(extractor.extract(text))
    names = {e.name for e in knowledge.entities}
    assert {
        "Journal of Mathematical Physics",
        "American Institute of Physics",
        "Marie Curie",
        "Warsaw",
        "Paris",
        "Jan P. Solovej",
        "University of Copenhagen",
        "Canberra",
        "Australia",
    } <= names
    assert "Dr" not in names and "The" not in names
    assert {
        ("Journal of Mathematical Physics", "published by", "American Institute of Physics", True),
        ("Journal of Mathematical Physics", "is a", "peer-reviewed journal", False),
        ("Marie Curie", "was born in", "Warsaw", True),
        ("Marie Curie", "moved to", "Paris", True),  # the "and <verb>" clause keeps the sentence's subject
        ("Jan P. Solovej", "from", "University of Copenhagen", True),
        ("Canberra", "is capital of", "Australia", True),
    } <= triples(knowledge.facts)
    assert not any(f.subject == "Paris" and f.object == "1891" for f in knowledge.facts)
    definition = next(e.definition for e in knowledge.entities if e.name == "Journal of Mathematical Physics")
    assert definition is not None and definition.startswith("The Journal of Mathematical Physics is a")
    born = next(f for f in knowledge.facts if f.predicate == "was born in")
    assert born.sentence == "Marie Curie was born in Warsaw and moved to Paris in 1891."


def test_cooccurrence_when_no_verb_phrase_links_names(extractor: OfflineExtractor) -> None:
    knowledge = extractor.extract_sync("The editor is George T. Solomon (George Washington University).")
    (fact,) = [f for f in knowledge.facts if f.subject == "George T. Solomon"]
    assert (fact.predicate, fact.object) == (COOCCURS, "George Washington University")
    assert fact.sentence == "The editor is George T. Solomon (George Washington University)."


def test_sentence_initial_words_and_dates(extractor: OfflineExtractor) -> None:
    text = "Residents of Oslo vote in June. Other residents vote in the city. It was founded on January 1, 1040."
    knowledge = extractor.extract_sync(text)
    names = {e.name for e in knowledge.entities}
    assert "Oslo" in names and "Residents" not in names and "Other" not in names and "It" not in names
    assert "January 1, 1040" not in names  # a date is a value, not an entity
    assert extractor.phrases("Who founded Oslo in January 1040?") == ["Oslo", "January 1040"]


def test_empty_and_lowercase_text(extractor: OfflineExtractor) -> None:
    assert extractor.extract_sync("").facts == []
    knowledge = extractor.extract_sync("nothing here is named, and nothing happens.")
    assert knowledge.entities == [] and knowledge.facts == []
