"""RDF 1.2 triple terms to RDF 1.1 reification and back, for data and for SPARQL text."""

from __future__ import annotations

import pytest
from pyoxigraph import BlankNode, DefaultGraph, NamedNode, Quad, RdfFormat, Store, Triple, parse

from sparqlrag.store import vocab
from sparqlrag.store.reification import as_rdf11, as_rdf12, sparql_as_rdf11
from sparqlrag.store.remote_data import batches

DATA = b"""@prefix ex: <http://example.org/> .
ex:r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( ex:s ex:p "o )>> x"@en-GB )>> ; ex:from ex:c .
ex:t ex:fact <<( ex:s ex:p "o )>> x"@en-GB )>> .
ex:u ex:fact <<( ex:s ex:p <<( ex:a ex:b 42 )>> )>> .
ex:s ex:p "o )>> x"@en-GB .
"""
R = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#"


def _triples() -> list[Triple]:
    return list(parse(DATA, format=RdfFormat.TURTLE))


def test_data_goes_to_rdf11_and_comes_back_the_same() -> None:
    quads = list(as_rdf11(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in _triples()))
    assert not any(isinstance(term, Triple) for q in quads for term in (q.subject, q.object))
    assert Quad(NamedNode("http://example.org/r"), vocab.RDF_SUBJECT, NamedNode("http://example.org/s")) in quads
    assert sorted(map(str, as_rdf12([q.triple for q in quads]))) == sorted(map(str, _triples()))


def test_rdf11_written_by_hand_with_its_type_reads_as_a_reifier() -> None:
    stated = parse(
        b"""@prefix ex: <http://example.org/> . @prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .
        ex:r a rdf:Statement ; rdf:subject ex:s ; rdf:predicate ex:p ; rdf:object ex:o ; ex:said ex:x .
        ex:half rdf:subject ex:s .""",
        format=RdfFormat.TURTLE,
    )
    back = sorted(map(str, as_rdf12(list(stated))))
    assert back == sorted(
        [
            "<http://example.org/half> <http://www.w3.org/1999/02/22-rdf-syntax-ns#subject> <http://example.org/s>",
            "<http://example.org/r> <http://example.org/said> <http://example.org/x>",
            "<http://example.org/r> <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> "
            "<<( <http://example.org/s> <http://example.org/p> <http://example.org/o> )>>",
        ]
    )  # a node stating only part of a triple is left as it is


def test_queries_and_updates_mean_the_same_on_either_form() -> None:
    """Each text runs on a store of RDF 1.2 data as written, and rewritten on the same data
    in RDF 1.1 form: the same answers."""
    rdf12, rdf11 = Store(), Store()
    rdf12.extend(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in _triples())
    rdf11.extend(as_rdf11(Quad(t.subject, t.predicate, t.object, DefaultGraph()) for t in _triples()))
    for query in (
        "SELECT ?r ?s WHERE { ?r rdf:reifies <<( ?s ex:p ?o )>> ; ex:from ?c }",
        'SELECT ?t WHERE { ?t ex:fact <<( ex:s ex:p "o )>> x"@en-GB )>> }',
        "SELECT ?u ?x WHERE { ?u ex:fact <<( ?s ?p <<( ex:a ?x 42 )>> )>> }",
        'SELECT ?o WHERE { ?s ?p ?o FILTER(?o = "<<( not a term )>>") }',
    ):
        text = "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> PREFIX ex: <http://example.org/> " + query
        assert "<<(" not in sparql_as_rdf11(text).replace('"o )>> x"', "").replace('"<<( not a term )>>"', "")
        mine = sorted(str(row) for row in rdf11.query(sparql_as_rdf11(text)))  # type: ignore[union-attr]
        theirs = sorted(str(row) for row in rdf12.query(text))  # type: ignore[union-attr]
        assert mine == theirs and (mine or "not a term" in query), query
    update = "DELETE WHERE { ?r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( ?s ?p ?o )>> ; ?x ?y }"
    rdf11.update(sparql_as_rdf11(update))
    rdf12.update(update)
    assert not list(rdf11.quads_for_pattern(NamedNode("http://example.org/r"), None, None))
    assert not list(rdf12.quads_for_pattern(NamedNode("http://example.org/r"), None, None))


def test_text_without_triple_terms_is_left_alone() -> None:
    text = 'SELECT * WHERE { ?s ?p "<<( a b c )>>" } # <<( x y z )>>'
    assert sparql_as_rdf11(text) == text
    with pytest.raises(SyntaxError):  # a triple term in an expression has no RDF 1.1 form: still refused
        Store().query(sparql_as_rdf11("SELECT (<<( <http://e/a> <http://e/b> <http://e/c> )>> AS ?t) {}"))


def test_write_batches_keep_a_blank_nodes_quads_together() -> None:
    g = NamedNode("http://example.org/g")
    plain = [Quad(NamedNode(f"http://e/s{i}"), vocab.RDFS_LABEL, NamedNode("http://e/o"), g) for i in range(7)]
    node = BlankNode("b")
    linked = [Quad(NamedNode("http://e/t"), vocab.RDFS_LABEL, node, g), Quad(node, vocab.RDF_SUBJECT, node, g)]
    runs = list(batches(plain[:3] + linked[:1] + plain[3:] + linked[1:], 3))
    assert sorted(map(str, (q for run in runs for q in run))) == sorted(map(str, plain + linked))
    assert any(all(q in run for q in linked) for run in runs)
    assert max(len(run) for run in runs) <= 4 and list(batches([], 3)) == [[]]
