"""`serve` (the HTTP server) and `demo` (the main job on the embedded defaults, then serve)."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources

import uvicorn

from sparqlrag.cli.answers import answer
from sparqlrag.cli.documents import ingest_paths
from sparqlrag.cli.session import CliError, Session, load_models
from sparqlrag.config import Settings
from sparqlrag.operations.access import check_grants
from sparqlrag.operations.requests import DEFAULT_GRAPH_MODE
from sparqlrag.server.app import create_app
from sparqlrag.server.http_protocol import uvicorn_config


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
        ingest_paths(job.services, "default", [folder])
        print(f"\nQuestion: {args.question}\n")
        answer(job.services, args.question, "default", DEFAULT_GRAPH_MODE, {"k": 3}, explain=True)
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
    config = uvicorn_config(
        create_app(settings, models), settings, host=settings.host, port=settings.port, access_log=access_log
    )
    uvicorn.Server(config).run()
