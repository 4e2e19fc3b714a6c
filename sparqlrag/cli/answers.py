"""`ask` (Graph RAG or Document RAG, with sources and trace) and `nl-query` (a question as SPARQL)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from sparqlrag.cli.session import Session, request_of
from sparqlrag.operations import answers, queries
from sparqlrag.operations.answers import DocumentRagAnswer, GraphRagAnswer, PassageView, SourceView
from sparqlrag.operations.collection import open_collection
from sparqlrag.operations.requests import DocumentRagRequest, GraphRagRequest, NlQuestion, validated
from sparqlrag.services import Services
from sparqlrag.store.base import QueryResult
from sparqlrag.store.vocab import local_name


def ask(session: Session, args: argparse.Namespace) -> None:
    named = ("k", "bridges", "documents", "scope")
    given = {name: value for name in named if (value := getattr(args, name)) is not None}
    answer(session.services, args.question, args.collection, args.mode, given, explain=args.explain)


def answer(
    services: Services, question: str, collection: str, mode: str, options: dict[str, Any], *, explain: bool
) -> None:
    """Prints the answer, with the walk when `explain` (graph modes), its sources and its trace.
    `mode` is a Graph RAG mode or "document"; `options` are the route's."""
    given = {"question": question, **options}
    found: GraphRagAnswer | DocumentRagAnswer
    if mode == "document":
        asked_documents = validated(DocumentRagRequest, given)
        found = asyncio.run(_ask_documents(services, collection, asked_documents))
    else:
        asked = validated(GraphRagRequest, given | {"mode": mode})
        found = asyncio.run(_ask_graph(services, collection, asked))
    print(found.answer.strip() + "\n")
    if isinstance(found, GraphRagAnswer) and explain:
        _explain(found)
    _sources(found.sources)
    print(f"\nTrace: {found.trace}")


async def _ask_graph(services: Services, name: str, asked: GraphRagRequest) -> GraphRagAnswer:
    return await answers.ask_graph(await open_collection(services, name), asked)


async def _ask_documents(services: Services, name: str, asked: DocumentRagRequest) -> DocumentRagAnswer:
    return await answers.ask_documents(await open_collection(services, name), asked)


def nl_query(session: Session, args: argparse.Namespace) -> None:
    services = session.services

    def run(query: str, form: str) -> QueryResult:
        accept = "text/turtle" if form == "construct" else "text/tab-separated-values"
        return services.store.query(query, accept=accept, union_default_graph=services.settings.union_default_graph)

    written = asyncio.run(_nl_query(services, args.collection, request_of(NlQuestion, args, collection=None), run))
    print(written.query + "\n")
    sys.stdout.buffer.write(written.result.body)


async def _nl_query(services: Services, name: str, asked: NlQuestion, run: queries.Runner) -> queries.NlAnswer:
    return await queries.nl_query(await open_collection(services, name), asked, run)


def _explain(found: GraphRagAnswer) -> None:
    print("Concepts: " + "; ".join(found.concepts))
    print("Seeds:    " + "; ".join(f"{s.label or local_name(s.entity)} ({s.score:.2f})" for s in found.seeds[:10]))
    print(f"Facts ({len(found.edges)} kept of {found.explored_edges} explored):")
    for edge in found.edges[:15]:
        print(f"  {edge.score:5.2f}  hop {edge.hop}  {edge.text}" + (f"  (via: {edge.via.text})" if edge.via else ""))
    print()


def _sources(sources: Sequence[PassageView]) -> None:
    """Each passage cited, with the documents holding copies of it and, for a bridge, the facts that brought it."""
    print("Sources:" if sources else "Sources: none")
    for number, passage in enumerate(sources, start=1):
        snippet = " ".join((passage.text or "").split())
        print(f"  [{number}] {passage.citation}: {snippet[:150]}{'...' if len(snippet) > 150 else ''}")
        if passage.copies:
            print("       also in: " + "; ".join(copy.title for copy in passage.copies))
        if isinstance(passage, SourceView) and passage.bridge:
            print("       bridge, reached through: " + " -> ".join(fact.text for fact in passage.bridged_by))
