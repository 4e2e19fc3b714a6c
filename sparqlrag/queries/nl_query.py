"""Natural language to SPARQL over an ontology: the part of the ontology the question is about
goes to the LLM, which writes a query; the query is parsed and checked before it runs.

The checks: it parses as SPARQL 1.1 (rdflib's parser), it is a SELECT, ASK or CONSTRUCT (an
update or DESCRIBE is refused), and every IRI in it is a class or property of the ontology, a
term of RDF, RDFS, OWL, XSD or SKOS, or an IRI under the server's base (entities, graphs). A
query that fails is refused with the reason and the query itself, and never runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparqlrag.library import librarian
from sparqlrag.models.llm import ChatModel
from sparqlrag.models.prompts import render
from sparqlrag.ontology.registry import Ontologies
from sparqlrag.ontology.selection import ElementIndexes, Selector, describe
from sparqlrag.retrieval.question import check_question
from sparqlrag.store import vocab
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import Iris
from sparqlrag.threads import off_loop

KNOWN_NAMESPACES = (vocab.RDF, vocab.RDFS, vocab.OWL, vocab.XSD, vocab.SKOS)
FORMS = {"SelectQuery": "select", "AskQuery": "ask", "ConstructQuery": "construct"}
_FENCE = re.compile(r"```(?:sparql)?\s*\n(.*?)```", re.S | re.I)


class NlQueryUnavailable(RuntimeError):
    """No LLM is configured: there is nothing to write the query."""


class QueryRejected(ValueError):
    """The generated query failed a check; `query` is what the LLM wrote."""

    def __init__(self, reason: str, query: str) -> None:
        super().__init__(reason)
        self.query = query


@dataclass(frozen=True)
class NlAnswer:
    question: str
    ontology: str
    query: str
    form: str  # "select", "ask" or "construct"
    result: QueryResult


def _iris(node: Any) -> Iterator[str]:
    """Every IRI in rdflib's algebra of a query."""
    from rdflib import URIRef

    if isinstance(node, URIRef):
        yield str(node)
    elif isinstance(node, dict):  # CompValue is a dict of its parts
        for value in node.values():
            yield from _iris(value)
    elif isinstance(node, (list, tuple, set)):
        for value in node:
            yield from _iris(value)


def check_query(text: str, allowed: set[str], base_iri: str) -> str:
    """The query's form ("select", "ask", "construct"); QueryRejected says what is wrong."""
    from rdflib.plugins.sparql import prepareQuery

    try:
        prepared = prepareQuery(text)
    except Exception as error:  # pyparsing's and rdflib's own errors: all mean "not a SPARQL query"
        kind = (
            "an update, which"
            if re.search(r"\b(INSERT|DELETE|LOAD|CLEAR|DROP|CREATE|COPY|MOVE|ADD)\b", text, re.I)
            else "it"
        )
        raise QueryRejected(
            f"the generated query does not parse as a SPARQL query ({kind} is refused): {error}", text
        ) from None
    form = FORMS.get(prepared.algebra.name)
    if form is None:
        raise QueryRejected(f"only SELECT, ASK and CONSTRUCT queries run here, not {prepared.algebra.name}", text)
    unknown = sorted(
        {
            iri
            for iri in _iris(prepared.algebra)
            if iri not in allowed and not iri.startswith((*KNOWN_NAMESPACES, base_iri))
        }
    )
    if unknown:
        raise QueryRejected(
            f"the generated query uses IRIs the ontology does not define: {', '.join(unknown[:5])}", text
        )
    return form


class NlQuery:
    def __init__(
        self,
        *,
        llm: ChatModel | None,
        ontologies: Ontologies,
        indexes: ElementIndexes,
        selector: Selector,
        base_iri: str,
        prompts_dir: Path | None = None,
    ) -> None:
        self.llm, self.ontologies, self.indexes, self.selector = llm, ontologies, indexes, selector
        self.base_iri, self.prompts_dir = base_iri, prompts_dir

    async def ask(
        self,
        question: str,
        run: Callable[[str, str], QueryResult],
        *,
        iris: Iris,
        ontology: str | None = None,
    ) -> NlAnswer:
        """Write, check and run a query over the collection `iris` names: `run(query, form)` runs it
        with the caller's time limit.
        Raises ValueError (a bad question, no ontology to use), UnknownOntology, NlQueryUnavailable,
        QueryRejected, and what `run` raises."""
        question = check_question(question)
        if self.llm is None:
            raise NlQueryUnavailable(
                'natural-language queries need an LLM to write the SPARQL: set llm to "anthropic" '
                '(with ANTHROPIC_API_KEY) or "openai" (with llm_base_url)'
            )
        name = ontology or await self._ontology_of(iris)
        index = await off_loop(self.indexes.get, name)
        (subset,) = await off_loop(self.selector.select, index, [question])
        graph = iris.knowledge_graph.value
        completion = await self.llm.complete(
            render("nl_query", self.prompts_dir, question=question, graph=graph, **describe(subset))
        )
        fenced = _FENCE.search(completion.text)
        query = (fenced.group(1) if fenced else completion.text).strip()
        allowed = {*index.ontology_model.classes, *index.ontology_model.properties, index.ontology_model.iri}
        form = await off_loop(check_query, query, allowed, self.base_iri)
        result = await off_loop(run, query, form)
        return NlAnswer(question, name, query, form, result)

    async def _ontology_of(self, iris: Iris) -> str:
        """The collection's ontology, else the only one loaded (ValueError if that is no answer)."""
        name = await off_loop(librarian.collection_ontology, self.ontologies.store, iris)
        if name is not None:
            return name
        loaded = await self.ontologies.list()
        if len(loaded) == 1:
            return loaded[0].name
        if not loaded:
            raise ValueError("no ontology is loaded: natural-language queries are written against one (load it first)")
        raise ValueError(
            f'several ontologies are loaded ({", ".join(i.name for i in loaded)}): name one with "ontology"'
        )
