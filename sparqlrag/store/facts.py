"""Facts as the walk reads them: which knowledge-graph triples are walked, and their text.

The fact index (store/fact_index.py) embeds each walked fact's text once, when the fact is
written, and Graph RAG scores edges against those vectors; both render a fact here, so what was
embedded is what the walk would have read.
"""

from __future__ import annotations

from collections.abc import Iterable

from pyoxigraph import Literal, NamedNode, RdfFormat, Triple, parse

from sparqlrag.store import vocab
from sparqlrag.store.base import QuadStore
from sparqlrag.store.select import lexical, select_values
from sparqlrag.store.sparql_text import sparql_term
from sparqlrag.store.vocab import Iris, local_name

# predicates that describe the schema or names, not the world: never walked
SCHEMA_NAMESPACES = (vocab.RDF, vocab.RDFS, vocab.OWL)
PREFILTERED = (vocab.SKOS_ALT_LABEL.value,)  # left out by the query itself (walked_filter)
# a thing's names are how the question finds it (the entity index), not facts to walk or recite;
# left out after the query, since each predicate more in the filter slows the walk's edge query
# (bench/RESULTS.md, "Issue 52")
SKIPPED_PREDICATES = (*PREFILTERED, *(p.value for p in vocab.NAME_PREDICATES))


def walked(triple: Triple) -> bool:
    """Whether the walk follows this fact (its predicate says something about the world, and
    its object is no statement about another fact)."""
    predicate = triple.predicate.value
    return (
        not predicate.startswith(SCHEMA_NAMESPACES)
        and predicate not in SKIPPED_PREDICATES
        and not isinstance(triple.object, Triple)
    )


def walked_filter(variable: str = "?p") -> str:
    """Most of `walked` as a SPARQL filter expression on the predicate variable: what it lets
    through is checked by `walked` too."""
    return " && ".join(
        [f'!STRSTARTS(STR({variable}), "{ns}")' for ns in SCHEMA_NAMESPACES]
        + [f"{variable} != <{p}>" for p in PREFILTERED]
    )


def labels_of(
    store: QuadStore, iris: Iris, triples: Iterable[Triple], known: dict[str, str] | None = None
) -> dict[str, str]:
    """A label for every term of the triples (node_labels); a literal is its own label."""
    triples = list(triples)
    labels = {term.value: term.value for t in triples for term in t if isinstance(term, Literal)}
    nodes = {term.value for t in triples for term in t if isinstance(term, NamedNode)}
    return labels | node_labels(store, iris, nodes, known)


def node_labels(
    store: QuadStore, iris: Iris, nodes: Iterable[str], known: dict[str, str] | None = None
) -> dict[str, str]:
    """A label for every IRI: its name in the knowledge graph (rdfs:label, else another of
    vocab.NAME_PREDICATES; one query per VALUES_BATCH of the IRIs `known` does not name), else
    vocab.ttl's for an sr: term, else the IRI's last segment."""
    nodes = set(nodes)
    vocabulary = vocab.vocabulary_labels()
    labels = {node: vocabulary.get(node) or local_name(node) for node in nodes}
    labels.update({node: label for node, label in (known or {}).items() if node in nodes})
    unnamed = sorted(nodes - set(known or {}))
    # rdfs:label first, the other name predicates for what has none: one lookup a node, not seven
    for predicates in (vocab.NAME_PREDICATES[:1], vocab.NAME_PREDICATES[1:]):
        named = _names(store, iris, unnamed, predicates) if unnamed else {}
        labels.update(named)
        unnamed = [node for node in unnamed if node not in named]
    return labels


def _names(store: QuadStore, iris: Iris, nodes: list[str], predicates: tuple[NamedNode, ...]) -> dict[str, str]:
    """Each node's preferred name by `predicates` in the knowledge graph (those that have one)."""
    graph = sparql_term(iris.knowledge_graph)
    pattern = vocab.named_by("?x", "?label", predicates)
    rows = select_values(
        store,
        "x",
        map(NamedNode, nodes),
        lambda asked: f"SELECT ?x ?label ?name_rank WHERE {{ {asked} GRAPH {graph} {{ {pattern} }} }}",
    )
    return vocab.preferred(rows, "x", "label")


def fact_labels(triple: Triple, labels: dict[str, str]) -> tuple[str, str, str]:
    subject, predicate, obj = (labels.get(lexical(term), lexical(term)) for term in triple)
    return subject, predicate, obj


def fact_text(triple: Triple, labels: dict[str, str]) -> str:
    """The fact as words: its three labels (what the walk scores, and the index embeds)."""
    return " ".join(fact_labels(triple, labels))


def fact_ntriples(triple: Triple) -> str:
    """The fact as one N-Triples statement (what a fact's vector payload keeps)."""
    return f"{triple.subject} {triple.predicate} {triple.object} ."


def parse_fact(statement: str) -> Triple:
    """The fact of an N-Triples statement written by `fact_ntriples`. Raises SyntaxError, or
    ValueError when it holds no statement."""
    for quad in parse(statement.encode("utf-8"), format=RdfFormat.N_TRIPLES):
        fact: Triple = quad.triple
        return fact
    raise ValueError(f"no fact in {statement!r}")
