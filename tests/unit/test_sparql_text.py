"""SPARQL text built and read without a store."""

from __future__ import annotations

import pytest

from sparqlrag.store import (
    QuerySyntaxError,
    UpdateDatasetConflict,
)
from sparqlrag.store.sparql_text import apply_update_dataset, query_form, slices


def test_update_dataset_lexer_reads_escaped_iris_and_names() -> None:
    """`#` after a \\u escape in an IRI, or escaped in a prefixed name, starts no comment."""
    for update in (
        r"INSERT { <http://a/\u0041#> <http://p> 1 } WHERE { ?s ?p ?o }",
        r"PREFIX ex: <http://e/> INSERT { ex:a\#b <http://p> 1 } WHERE { ?s ?p ?o }",
    ):
        assert "USING <http://d> WHERE" in apply_update_dataset(update, ["http://d"], [])


def test_update_dataset_is_written_as_using_clauses() -> None:
    update = (
        "PREFIX x: <http://x/> INSERT { GRAPH <http://out> { ?s a x:where } } WHERE { ?s a ?where . "
        '{ SELECT * WHERE { ?s ?p "WHERE" } } } ; DELETE WHERE { ?s <http://p> ?o } ; INSERT DATA { <http://a> '
        '<http://b> "c" }'
    )
    rewritten = apply_update_dataset(update, ["http://d"], ["http://n"])
    assert rewritten.count("USING <http://d> USING NAMED <http://n> WHERE") == 2
    assert "DELETE { ?s <http://p> ?o } USING <http://d>" in rewritten
    assert apply_update_dataset(update, [], []) == update
    with pytest.raises(UpdateDatasetConflict):
        apply_update_dataset("WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }", ["http://d"], [])
    with pytest.raises(QuerySyntaxError):
        apply_update_dataset("DELETE WHERE { ?s ?p ?o }", ["http://d> } ; DROP ALL ; INSERT DATA { <http://x"], [])


def test_the_query_form_is_the_first_keyword_past_the_prologue() -> None:
    assert query_form("PREFIX select: <http://s/> BASE <http://b/> # ASK\n CONSTRUCT { ?s ?p ?o } WHERE {}") == (
        "CONSTRUCT"
    )
    assert query_form("describe <http://e/x>") == "DESCRIBE"
    assert query_form('SELECT ("ASK" AS ?x) {}') == "SELECT" and query_form("ask {}") == "ASK"
    assert query_form("not a query") is None


def test_slices_cover_every_item_once_in_order() -> None:
    items = list(range(4_500))
    runs = list(slices(items))
    assert [len(run) for run in runs] == [2_000, 2_000, 500] and [i for run in runs for i in run] == items
    assert list(slices([])) == []
