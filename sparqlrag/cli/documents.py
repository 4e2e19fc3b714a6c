"""`ingest`, `reingest`, `documents`, `forget`, `index`, `entities`: documents in, knowledge out."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from sparqlrag.cli.session import CliError, Session
from sparqlrag.extraction.curation import CurationRefused, UnknownEntity
from sparqlrag.extraction.decoders import EXTENSIONS
from sparqlrag.extraction.plans import IngestResult, Source
from sparqlrag.library import librarian
from sparqlrag.library.librarian import UnknownCollection
from sparqlrag.services import Services
from sparqlrag.store.vocab import Iris


def ingest(session: Session, args: argparse.Namespace) -> None:
    ingest_paths(session.services, args.collection, args.paths)


def ingest_paths(services: Services, collection: str, paths: list[Path]) -> None:
    """Finishes what a stopped run left, then ingests the files, folders and JSONL corpora,
    one line per document; CliError when any failed."""
    pipeline = services.pipeline
    for result in asyncio.run(pipeline.recover()):
        print(
            f"recovered  {result}" if isinstance(result, Exception) else f"recovered  {result.document}",
            file=sys.stderr,
        )
    corpora = [p for p in paths if p.suffix == ".jsonl" and p.is_file()]
    files = [p for p in paths if p not in corpora]
    sources = [s for corpus in corpora for s in _jsonl_documents(corpus)]
    if files or not sources:
        sources += [
            Source(document_id, path.read_bytes(), filename=path.name) for document_id, path in _document_files(files)
        ]
    with _progress("extracting", "chunk") as progress:
        results = asyncio.run(pipeline.ingest_many(collection, sources, on_progress=progress))
    _report(sources, results)


def reingest(session: Session, args: argparse.Namespace) -> None:
    pipeline = session.services.pipeline
    try:
        sources = [asyncio.run(pipeline.kept_source(args.collection, document_id)) for document_id in args.documents]
    except LookupError as error:
        raise CliError(str(error)) from None
    _report(sources, asyncio.run(pipeline.ingest_many(args.collection, sources, force=True)))


def documents(session: Session, args: argparse.Namespace) -> None:
    services = session.services
    iris = Iris(services.settings.base_iri, args.collection)
    if not librarian.collection_exists(services.store, iris):
        raise UnknownCollection(args.collection)
    rows = librarian.documents(services.store, iris)
    if not rows:
        print(f"no documents in collection {args.collection!r}", file=sys.stderr)
    for info in rows:
        print(f"{info.status:10} {info.chunks:5} chunks  {info.id}  ({info.title}, {info.media_type})")


def forget(session: Session, args: argparse.Namespace) -> None:
    if not asyncio.run(session.services.pipeline.forget(args.collection, args.document)):
        raise CliError(f"no document {args.document!r} in collection {args.collection!r}")
    print(f"forgot {args.document}")


def index(session: Session, args: argparse.Namespace) -> None:
    """Entities and facts of triples loaded into {base}graph/C (with `load --graph`) become
    groundable and scorable."""
    indexer = session.services.pipeline.indexer
    with _progress("indexing", "item") as progress:
        entities, facts = asyncio.run(indexer.index_graph(args.collection, on_progress=progress))
    print(f"indexed {entities} entity vectors and {facts} fact vectors in collection {args.collection!r}")


def reindex(session: Session, args: argparse.Namespace) -> None:
    """The derived indexes rebuilt from what the store holds: the store is the system of record."""
    services = session.services
    names = [args.collection] if args.collection else [info.name for info in asyncio.run(services.collections.list())]
    for name in names:
        with _progress(f"reindexing {name}", "item") as progress:
            written = asyncio.run(services.pipeline.indexer.reindex(name, on_progress=progress))
        print(f"reindexed collection {name!r}: {written} vectors")


def entities(session: Session, args: argparse.Namespace) -> None:
    """Prints the entity's aliases and merges (JSON) after the change."""
    curation = session.services.curation
    try:
        if args.action == "merge":
            result = asyncio.run(curation.merge(args.collection, args.entity, args.other))
        elif args.action == "split":
            result = asyncio.run(curation.split(args.collection, args.entity, args.alias))
        else:
            result = asyncio.run(curation.aliases(args.collection, args.entity))
    except (UnknownEntity, CurationRefused) as error:
        raise CliError(str(error.args[0])) from None
    print(json.dumps(asdict(result), indent=2, ensure_ascii=False))


@contextmanager
def _progress(description: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, as the `on_progress(done, total)` callback the pipeline takes."""
    with tqdm(total=0, unit=unit, desc=description, file=sys.stderr) as bar:

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield update


def _jsonl_documents(path: Path) -> list[Source]:
    """A corpus file of {"id", "title", "text"} lines, one document a line."""
    sources = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            sources.append(
                Source(
                    str(item["id"]),
                    f"{item.get('title', '')}\n\n{item['text']}".strip().encode(),
                    "text/plain",
                    path.name,
                    item.get("title"),
                )
            )
        except (ValueError, KeyError, TypeError) as error:
            raise CliError(f'{path}, line {number}: expected {{"id", "title", "text"}} ({error})') from None
    return sources


def _document_files(paths: list[Path]) -> list[tuple[str, Path]]:
    """(document id, file): a file is named by its name, a folder's files by their path inside it."""
    found: list[tuple[str, Path]] = []
    for path in paths:
        if path.is_dir():
            found += [(str(f.relative_to(path)), f) for f in sorted(path.rglob("*")) if f.suffix.lower() in EXTENSIONS]
        elif path.is_file():
            found.append((path.name, path))
        else:
            raise CliError(f"no such file or folder: {path}")
    if not found:
        raise CliError("no documents found (.txt, .md, .html, .pdf)")
    ids = [document_id for document_id, _ in found]
    if len(set(ids)) != len(ids):
        raise CliError("two files would get the same document id; ingest them separately")
    return found


def _report(sources: list[Source], results: list[IngestResult | Exception]) -> None:
    """One line per document; CliError when any failed."""
    failed = 0
    for source, result in zip(sources, results):
        if isinstance(result, Exception):
            failed += 1
            print(f"failed     {source.document_id}: {result}")
        elif result.status == "unchanged":
            print(f"unchanged  {source.document_id}")
        else:
            print(
                f"ready      {source.document_id}: {result.chunks_added} chunks added, {result.chunks_removed} "
                f"removed, {result.chunks_kept} kept, {result.facts} facts"
            )
    if failed:
        raise CliError(f"{failed} of {len(sources)} documents failed")
