"""A store's odd answer to the ontology registry's query is an error in the log and a row left
out, never a crash: a remote store answering in another shape stopped the server at start."""

from __future__ import annotations

import pytest

from sparqlrag.ontology.registry import _info_of

GOOD = {
    "name": "people",
    "iri": "http://example.org/people",
    "classes": "2",
    "properties": "3",
    "triples": "10",
    "sha": "ab",
    "loaded": "2026-01-01T00:00:00Z",
}


def test_a_registration_is_read() -> None:
    info = _info_of(GOOD)
    assert info is not None and info.name == "people" and info.classes == 2


@pytest.mark.parametrize(
    "row",
    [
        {key: value for key, value in GOOD.items() if key != "name"},  # a variable the store did not bind
        {"count": "3"},  # another query's shape
        {**GOOD, "classes": "many"},  # a value that is no number
        {**GOOD, "triples": None},
    ],
)
def test_an_odd_row_is_left_out(row: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    assert _info_of(row) is None
    assert "does not parse" in caplog.text
