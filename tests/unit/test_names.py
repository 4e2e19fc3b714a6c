"""The rules entity resolution joins names by (extraction/names.py, resolution.py), on their own."""

from __future__ import annotations

from sparqlrag.extraction.knowledge import Entity, Knowledge
from sparqlrag.extraction.names import compared, initials_match, is_acronym, longer_form, name_key
from sparqlrag.extraction.resolution import Known, completed, resolve

ID = "http://kb.example/id/default/"


def test_name_keys_set_aside_case_diacritics_punctuation_the_and_plurals() -> None:
    assert name_key("The Café Procope") == name_key("cafe procope") == "cafe procope"
    assert name_key("Berners-Lee") == name_key("berners lee") and name_key("The Academy Awards") == "academy award"
    assert (
        name_key("cafés") == "cafe" and name_key("Queens") == "queens" and name_key("BRICS") == "brics"
    )  # a name's -s is its own
    assert (
        name_key("glass") == "glass" and name_key("Hague") == "hague" and name_key("The") == "the"
    )  # a lone "the" is a name
    assert name_key("45%") != name_key("45")


def test_a_name_is_not_the_common_noun_it_spells() -> None:
    """Names as imported triples give them (the offline extractor finds only capitalised ones)."""
    knowledge = Knowledge(
        [Entity(n) for n in ("Good", "goods", "State", "states", "The Hague", "Hague", "rivers", "river")]
    )
    resolution = resolve([("chunk", "", knowledge)], Known(), lambda m, _: ID + m.name.lower().replace(" ", "-"))
    names = {m.name: iri.rsplit("/", 1)[-1] for m, iri in resolution.iris.items()}
    assert names["Good"] == "good" and names["goods"] == "goods" and names["State"] != names["states"]
    assert names["Hague"] == names["The Hague"] and names["river"] == names["rivers"]


def test_acronyms_must_spell_their_expansion() -> None:
    assert is_acronym("W3C") and is_acronym("CERN") and not is_acronym("Paris") and not is_acronym("World Wide Web")
    assert initials_match("W3C", "World Wide Web Consortium")
    assert initials_match("OPEC", "Organization of the Petroleum Exporting Countries")
    assert not initials_match("IBM", "World Health Organization")
    assert not initials_match("WHO", "World")  # one word is no expansion


def _resolved(text: str, known: Known | None = None) -> dict[str, str]:
    """Each name of an offline extraction of `text` -> the last segment of the IRI it resolves to."""
    from sparqlrag.extraction.offline import OfflineExtractor

    knowledge: Knowledge = completed(OfflineExtractor().extract_sync(text), text)
    resolution = resolve(
        [("chunk", text, knowledge)], known or Known(), lambda m, _: ID + name_key(m.name).replace(" ", "-")
    )
    return {m.name: iri.rsplit("/", 1)[-1] for m, iri in resolution.iris.items()}


def test_an_acronym_joins_its_expansion_only_where_the_text_defines_it() -> None:
    for text in (
        "The National Aeronautics and Space Administration (NASA) is in Washington. NASA flew to the Moon.",
        "NASA (National Aeronautics and Space Administration) is in Washington. NASA flew to the Moon.",
        "The National Aeronautics and Space Administration, known as NASA, flew to the Moon.",
    ):
        assert _resolved(text)["NASA"] == "national-aeronautics-and-space-administration", text
    assert _resolved("The National Aeronautics and Space Administration is in Washington. NASA flew.")["NASA"] == "nasa"
    assert _resolved("The World Bank (IBRD) lent money to Peru.")["IBRD"] == "ibrd"  # the letters disagree


def test_a_partial_name_joins_the_one_full_name_it_ends_in_its_document() -> None:
    assert (
        _resolved("Tim Berners-Lee was born in London. Berners-Lee invented the Web.")["Berners-Lee"]
        == "tim-berners-lee"
    )
    both = _resolved("Marie Curie was born in Warsaw. Pierre Curie taught in Paris. Curie won a prize.")
    assert both["Curie"] == "curie"  # two Curies: which one is not evidence, so none


def test_a_longer_form_of_a_persons_name_adds_middle_names_or_initials_and_nothing_else() -> None:
    assert longer_form("Robert Bradbury", "Robert N. Bradbury") and longer_form(
        "Robert N. Bradbury", "Robert Nelson Bradbury"
    )
    assert longer_form("Janis Joplin", "Janis Lyn Joplin") and not longer_form("Janis Lyn Joplin", "Janis Joplin")
    assert not longer_form("Christopher Newton", "David Christopher Newton")  # another first name
    assert not longer_form("Robert M. Bradbury", "Robert Nelson Bradbury")  # another middle name
    assert not longer_form("John Murry", "John Middleton Murry Jr.")  # his son
    assert not longer_form("University of Wales", "University College of Wales")  # no person's name
    assert not longer_form("Robert Bradbury", "Robert Bradbury")  # the same name is the "normalised" rule's


def test_two_forms_of_a_name_are_compared_by_their_definitions_which_must_not_give_other_years() -> None:
    assert (
        compared("John Ferguson", "a footballer born in 1901", "John Alexander Ferguson", "a politician born in 1850")
        is None
    )
    assert compared(
        "John Ferguson", "a footballer born in 1901", "John A. Ferguson", "a Scottish footballer (1901-1960)"
    ) == ("John Ferguson: a footballer born in 1901", "John A. Ferguson: a Scottish footballer (1901-1960)")
    assert (
        compared("John Ferguson", None, "John A. Ferguson", "a Scottish footballer") is None
    )  # a name alone says too little


def test_a_shorter_form_of_the_one_full_name_of_a_document_joins_it() -> None:
    text = (
        "Robert N. Bradbury was born in Walla Walla. Robert Nelson Bradbury moved to Utah. "
        "Robert Bradbury directed films."
    )
    resolved = _resolved(text)
    assert {resolved[n] for n in ("Robert N. Bradbury", "Robert Nelson Bradbury", "Robert Bradbury")} == {
        "robert-bradbury"
    }
    two = _resolved("Mary Ann Smith met Mary Jane Smith in York. Mary Smith wrote novels.")
    assert (
        two["Mary Smith"] == "mary-smith" and two["Mary Ann Smith"] == "mary-ann-smith"
    )  # which Mary Smith is not evidence
    family = _resolved("John H. Taylor was the son of Thomas E. Taylor and the grandson of John Taylor.")
    assert family["John H. Taylor"] == "john-h-taylor"  # relatives share names across generations
