"""`ask` (Graph RAG or Document RAG, with sources and trace) and `nl-query` (a question as SPARQL)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Literal

from pydantic import ValidationError
from pyoxigraph import Triple

from sparqlrag.cli.session import CliError, Session
from sparqlrag.library import librarian
from sparqlrag.library.librarian import UnknownCollection
from sparqlrag.queries.nl_query import NlQueryUnavailable, QueryRejected
from sparqlrag.retrieval.document_rag import Passage
from sparqlrag.retrieval.options import DocumentRagOptions, GraphMode, GraphRagOptions
from sparqlrag.retrieval.walk import EmptyGraph, GraphAnswer, fact_texts
from sparqlrag.server.contracts import said
from sparqlrag.services import Services
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import Iris, local_name


def ask(session: Session, args: argparse.Namespace) -> None:
    answer(
        session.services,
        args.question,
        mode=args.mode,
        collection=args.collection,
        k=args.k,
        explain=args.explain,
        bridges=args.bridges,
    )


def answer(
    services: Services,
    question: str,
    *,
    mode: Literal[GraphMode, Literal["document"]],
    collection: str,
    k: int,
    explain: bool,
    bridges: int | None = None,
) -> None:
    """Prints the answer, with the walk when `explain` (graph modes), its sources and its trace."""
    if not librarian.collection_exists(services.store, Iris(services.settings.base_iri, collection)):
        raise UnknownCollection(collection)
    explained: GraphAnswer | None = None
    try:
        if mode == "document":
            found = asyncio.run(services.document_rag.answer(collection, question, DocumentRagOptions(k=k)))
            text, passages, trace = found.answer, found.passages, found.trace
        else:
            options = GraphRagOptions(k=k, **({} if bridges is None else {"bridges": bridges}))
            explained = asyncio.run(services.graph_rag.answer(collection, question, options, mode))
            text, passages, trace = explained.answer, explained.passages, explained.trace
    except ValidationError as error:
        raise CliError(said(error, GraphRagOptions if mode != "document" else DocumentRagOptions)) from None
    except (ValueError, EmptyGraph) as error:
        raise CliError(str(error)) from None
    print(text.strip() + "\n")
    if explained is not None and explain:
        _explain(explained)
    _sources(passages, fact_texts(explained.edges) if explained else {})
    print(f"\nTrace: {trace}")


def nl_query(session: Session, args: argparse.Namespace) -> None:
    services = session.services

    def run(query: str, form: str) -> QueryResult:
        accept = "text/turtle" if form == "construct" else "text/tab-separated-values"
        return services.store.query(query, accept=accept, union_default_graph=services.settings.union_default_graph)

    if not asyncio.run(services.collections.exists(args.collection)):
        raise UnknownCollection(args.collection)
    try:
        written = asyncio.run(
            services.nl_query.ask(args.question, run, collection=args.collection, ontology=args.ontology)
        )
    except QueryRejected as error:
        raise CliError(f"{error}\n{error.query}") from None
    except (NlQueryUnavailable, ValueError) as error:
        raise CliError(str(error)) from None
    print(written.query + "\n")
    sys.stdout.buffer.write(written.result.body)


def _explain(explained: GraphAnswer) -> None:
    print("Concepts: " + "; ".join(explained.concepts))
    print("Seeds:    " + "; ".join(f"{local_name(s.entity)} ({s.score:.2f})" for s in explained.seeds[:10]))
    print(f"Facts ({len(explained.edges)} kept of {explained.explored} explored):")
    for edge in explained.edges[:15]:
        print(f"  {edge.score:5.2f}  hop {edge.hop}  {edge.text}" + (f"  (via: {edge.via.text})" if edge.via else ""))
    print()


def _sources(passages: list[Passage], facts: dict[Triple, str]) -> None:
    """Each passage cited, with the documents holding copies of it and, for a bridge, the facts that brought it."""
    print("Sources:" if passages else "Sources: none")
    for number, passage in enumerate(passages, start=1):
        snippet = " ".join(passage.text.split())
        print(f"  [{number}] {passage.citation}: {snippet[:150]}{'...' if len(snippet) > 150 else ''}")
        if passage.copies:
            print("       also in: " + "; ".join(title for _, title in passage.copies))
        if passage.bridge:
            print("       bridge, reached through: " + " -> ".join(facts[f] for f in passage.bridge))
