"""The `sparqlrag` command: the parser (parser.py) picks a command, the table below its function.

Every command is `function(session, args)`; the session opens the store and loads models only
when the command first asks for them. The table names functions as "module:function" (as
entry points do) so that only the chosen command's module is imported: `query` and `load` start
without importing the models and vector index, which take seconds.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pkgutil import resolve_name
from typing import cast

from sparqlrag.cli.memory import bound_malloc_arenas
from sparqlrag.cli.parser import build_parser
from sparqlrag.cli.session import CliError, Session, settings_of
from sparqlrag.operations.failures import USER_FAILURES

Command = Callable[[Session, argparse.Namespace], None]

COMMANDS: dict[str, str] = {
    "serve": "sparqlrag.cli.serving:serve",
    "demo": "sparqlrag.cli.serving:demo",
    "mcp": "sparqlrag.cli.mcp_stdio:mcp",
    "query": "sparqlrag.cli.rdf:query",
    "update": "sparqlrag.cli.rdf:update",
    "load": "sparqlrag.cli.rdf:load",
    "dump": "sparqlrag.cli.rdf:dump",
    "ontology": "sparqlrag.cli.ontologies:ontology",
    "ingest": "sparqlrag.cli.documents:ingest",
    "reingest": "sparqlrag.cli.documents:reingest",
    "documents": "sparqlrag.cli.documents:documents",
    "forget": "sparqlrag.cli.documents:forget",
    "index": "sparqlrag.cli.documents:index",
    "reindex": "sparqlrag.cli.documents:reindex",
    "entities": "sparqlrag.cli.documents:entities",
    "collections": "sparqlrag.cli.collections:collections",
    "core": "sparqlrag.cli.collections:core",
    "ask": "sparqlrag.cli.answers:ask",
    "nl-query": "sparqlrag.cli.answers:nl_query",
}

USER_ERRORS: tuple[type[Exception], ...] = (CliError, *USER_FAILURES)


def command(name: str) -> Command:
    return cast(Command, resolve_name(COMMANDS[name]))


def run(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    with Session(settings_of(args), args) as session:
        command(args.command)(session, args)


def main(argv: list[str] | None = None) -> None:
    """Runs a command; a user's error is one line on stderr and exit status 2, never a traceback."""
    bound_malloc_arenas()
    try:
        try:
            run(argv)
        finally:
            sys.stdout.flush()  # here, where a reader gone (`| head`) is caught, not at exit
    except BrokenPipeError:
        # the reader has what it wanted: no traceback, and no second error when Python flushes at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(128 + signal.SIGPIPE) from None
    except USER_ERRORS as error:
        print(f"sparqlrag: error: {error}", file=sys.stderr)
        for value in getattr(error, "extra", {}).values():  # (what the person needs to act on it)
            print(value, file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
