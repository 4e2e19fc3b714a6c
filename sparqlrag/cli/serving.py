"""`serve` (the HTTP server) and `demo` (the main job on the embedded defaults, then serve)."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from urllib.parse import urlsplit

import uvicorn

from sparqlrag.cli.answers import answer
from sparqlrag.cli.documents import ingest_paths
from sparqlrag.cli.session import LOOPBACK_NAMES, CliError, Session, load_models
from sparqlrag.config import Settings
from sparqlrag.operations.access import check_grants
from sparqlrag.operations.requests import DEFAULT_GRAPH_MODE
from sparqlrag.server.app import create_app
from sparqlrag.server.http_protocol import uvicorn_config
from sparqlrag.store.vocab import DEFAULT_COLLECTION


def serve(session: Session, args: argparse.Namespace) -> None:
    _serve(session.settings, args.access_log)


def demo(session: Session, args: argparse.Namespace) -> None:
    """Ingests the shipped corpus (unchanged files are skipped on later runs), answers by Graph
    RAG with sources and trace, then serves. With ANTHROPIC_API_KEY set (and no LLM configured)
    Claude answers; extraction stays as configured."""
    settings = session.settings
    if settings.llm == "none" and os.environ.get("ANTHROPIC_API_KEY"):
        settings = settings.model_copy(update={"llm": "anthropic"})
    corpus = resources.files("sparqlrag") / "demo" / "corpus"
    with resources.as_file(corpus) as folder, Session(settings, args) as job:
        ingest_paths(job.services, DEFAULT_COLLECTION, [folder])
        print(f"\nQuestion: {args.question}\n")
        answer(job.services, args.question, DEFAULT_COLLECTION, DEFAULT_GRAPH_MODE, {"k": 3}, explain=True)
    if not args.no_serve:
        url = f"http://{settings.host}:{settings.port}/"
        print(
            f"\nOpen {url} for the SPARQL editor, {url}ask to ask questions, or point any SPARQL client at "
            f"{url}sparql. Ctrl-C stops."
        )
        _serve(settings, access_log=False)


def _serve(settings: Settings, access_log: bool) -> None:
    try:
        settings.check_bind_address()
        check_grants(settings)
    except ValueError as error:
        raise CliError(str(error)) from None
    models = load_models(settings)
    url = f"http://{settings.host}:{settings.port}/"
    print(
        f"sparqlrag serving {settings.data_dir}: SPARQL editor {url}, ask page {url}ask, endpoint {url}sparql",
        file=sys.stderr,
    )
    if warning := elsewhere(settings):
        print(f"sparqlrag: warning: {warning}", file=sys.stderr)
    config = uvicorn_config(
        create_app(settings, models), settings, host=settings.host, port=settings.port, access_log=access_log
    )
    uvicorn.Server(config).run()


def elsewhere(settings: Settings) -> str | None:
    """Why the server's own links would lead away from it: its base IRI names this machine on
    another port (a data directory made by `demo` on 7878, served on 8000, mints and links
    IRIs under :7878). None when they resolve here, or when the base IRI names another host
    (a proxy's public name)."""
    base = urlsplit(settings.base_iri)
    if base.hostname not in LOOPBACK_NAMES or settings.host not in LOOPBACK_NAMES:
        return None
    port = base.port or (443 if base.scheme == "https" else 80)
    if port == settings.port:
        return None
    return (
        f"this data directory's IRIs are under {settings.base_iri} (pinned when it was made), so the links of "
        f"a server on port {settings.port} lead to port {port}: serve it with --port {port}, or pass --base-iri "
        "to a new data directory"
    )
