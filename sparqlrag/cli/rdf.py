"""`query`, `update`, `load`, `dump`: SPARQL and RDF files on the data directory."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from pyoxigraph import RdfFormat
from tqdm import tqdm

from sparqlrag.cli.session import CliError, Session
from sparqlrag.cli.table import TABLE, readable
from sparqlrag.store.formats import FORMAT_NAMES, rdf_format_for_path
from sparqlrag.store.reification import rewrite_as_rdf11


def query(session: Session, args: argparse.Namespace) -> None:
    """A table for a person at a terminal (SELECT; ASK says yes or no); the standard formats
    (JSON, Turtle, or --format) for pipes, files and programs."""
    settings = session.settings
    table = args.format == TABLE or (args.format is None and sys.stdout.isatty())
    fmt = None if args.format in (None, TABLE) else FORMAT_NAMES[args.format]
    text, union = _text_argument(args.sparql), settings.union_default_graph and not args.no_union
    timeout = None
    if "service" in text.lower():  # (what evaluates our services takes seconds to import: only when one may be called)
        text, timeout = _with_services(session, text, union)
    result = session.store.query(
        text,
        accept=fmt.media_type.split(";")[0] if fmt else None,
        base_iri=settings.base_iri,
        union_default_graph=union,
        timeout=timeout,
    )
    if table and result.kind != "graph":
        print(readable(result.body))
    else:
        sys.stdout.buffer.write(result.body)
        if not result.body.endswith(b"\n"):
            sys.stdout.buffer.write(b"\n")


def _with_services(session: Session, text: str, union: bool) -> tuple[str, float | None]:
    """The query with sr:documentRag and sr:graphRag evaluated here, with the models (README,
    "Retrieval inside SPARQL"), and the time its deadline leaves the query; as it was if it calls none."""
    from sparqlrag.operations.access import EVERYTHING
    from sparqlrag.operations.deadline import Deadline
    from sparqlrag.operations.scopes import Dataset
    from sparqlrag.operations.sparql_services import calls_in, with_services

    calls = calls_in(text)
    if not calls:
        return text, None
    deadline, dataset = Deadline(session.settings.query_timeout), Dataset(union_default_graph=union)
    text = asyncio.run(with_services(session.services, text, calls, EVERYTHING, dataset=dataset, deadline=deadline))
    return text, deadline.left()


def update(session: Session, args: argparse.Namespace) -> None:
    session.store.update(_text_argument(args.sparql), base_iri=session.settings.base_iri)


def load(session: Session, args: argparse.Namespace) -> None:
    """Every file is checked before any is loaded; a large one goes in bulk (faster, not
    transactional) unless it replaces a graph."""
    for path in args.files:
        if not path.is_file():
            raise CliError(f"no such file: {path}")
    settings = session.settings
    store = session.store
    held = store.count()
    for path in args.files:
        try:
            fmt = rdf_format_for_path(path, args.format)
        except ValueError as error:
            raise CliError(str(error)) from None
        size = path.stat().st_size
        bulk = size > settings.bulk_load_bytes and not args.replace
        with (
            path.open("rb") as file,
            tqdm(total=size, unit="B", unit_scale=True, desc=path.name, disable=size < 1_000_000) as bar,
        ):
            store.load(  # the embedded store reads the file as it loads it: the bar follows
                _ProgressReader(file, bar) if store.loads_readers else path,  # type: ignore[arg-type]
                fmt,
                graph=args.graph,
                base_iri=settings.base_iri,
                replace=args.replace,
                bulk=bulk,
            )
        before, held = held, store.count()  # quads the file added (those already held are not counted again)
        print(
            f"loaded {path} ({fmt.name}{', bulk' if bulk else ''}): {held - before:+,} quads, {held:,} in the store",
            file=sys.stderr,
        )


def dump(session: Session, args: argparse.Namespace) -> None:
    graph = "all" if args.graph is None else (None if args.graph == "DEFAULT" else args.graph)
    fmt = FORMAT_NAMES[args.format or ("trig" if graph == "all" else "turtle")]
    target = args.output or sys.stdout.buffer
    if not args.rdf11:
        session.store.dump(target, fmt, graph)  # type: ignore[arg-type]
        return
    with tempfile.TemporaryDirectory() as folder:  # RDF 1.2 first, rewritten as it streams out
        nquads = Path(folder) / "dump.nq"
        session.store.dump(nquads, RdfFormat.N_QUADS, graph)
        rewrite_as_rdf11(nquads, target, fmt)  # type: ignore[arg-type]


def _text_argument(value: str) -> str:
    """The text itself, @FILE for a file's, or - for stdin's."""
    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise CliError(f"no such file: {path}")
        return path.read_text(encoding="utf-8")
    return value


class _ProgressReader:
    """A binary file whose reads advance a progress bar (pyoxigraph reads it in chunks)."""

    def __init__(self, file: BinaryIO, bar: tqdm) -> None:
        self._file, self._bar = file, bar

    def read(self, size: int = -1) -> bytes:
        data = self._file.read(size)
        self._bar.update(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        position = self._file.seek(offset, whence)
        self._bar.reset()
        return position
