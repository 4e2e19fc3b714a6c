"""`ingest`, `reingest`, `documents`, `forget`, `index`, `entities`: documents in, knowledge out."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from itertools import chain, islice
from pathlib import Path
from typing import Any

from tqdm import tqdm

from sparqlrag.cli.session import CliError, Session, request_of
from sparqlrag.operations import collections as collections_
from sparqlrag.operations import documents as documents_
from sparqlrag.operations import entities as entities_
from sparqlrag.operations.access import EVERYTHING
from sparqlrag.operations.collection import open_collection
from sparqlrag.operations.documents import EXTENSIONS, DocumentInfo, Ingested, Source
from sparqlrag.operations.requests import AliasesQuery, EntityMerge, EntitySplit
from sparqlrag.services import Services

INGEST_BATCH = 256  # documents a pipeline call: enough for its batched embedding, few enough to hold


def ingest(session: Session, args: argparse.Namespace) -> None:
    ingest_paths(session.services, args.collection, args.paths)


def ingest_paths(services: Services, collection: str, paths: list[Path]) -> None:
    """Finishes the ingests a stopped run left (the session repaired the rest), then ingests the
    files, folders and JSONL corpora, one line per document; CliError when any failed.
    Everything is checked before the first write (ids, JSONL lines); documents are then read and
    ingested INGEST_BATCH at a time, so memory does not grow with the corpus."""
    opened = asyncio.run(open_collection(services, collection))
    for result in asyncio.run(documents_.recover(services)):
        print(
            f"recovered  {result}" if isinstance(result, Exception) else f"recovered  {result.document}",
            file=sys.stderr,
        )
    corpora = [p for p in paths if p.suffix == ".jsonl" and p.is_file()]
    files = [p for p in paths if p not in corpora]
    ids = [document_id for corpus in corpora for document_id in _jsonl_ids(corpus)]
    named = _document_files(files) if files or not ids else []
    ids += [document_id for document_id, _ in named]
    if len(set(ids)) != len(ids):
        raise CliError("two documents would get the same id; ingest them separately")
    sources = chain((s for corpus in corpora for s in _jsonl_documents(corpus)), _read(named))

    async def run(bar: tqdm) -> int:
        failed = done = extracted = 0  # documents ingested, chunks extracted by the batches before
        while batch := list(islice(sources, INGEST_BATCH)):

            def within(chunks: int, of: int, before: int = extracted) -> None:
                bar.total = before + of  # grows as each document of the batch is chunked
                bar.update(before + chunks - bar.n)

            failed += _report(batch, await documents_.ingest(opened, batch, on_progress=within))
            done, extracted = done + len(batch), bar.n
            bar.set_postfix_str(f"{done}/{len(ids)} documents")
        return failed

    # counted in chunks, so that one big document moves the bar too; the documents done beside it
    with tqdm(total=0, unit="chunk", desc="ingesting", file=sys.stderr, postfix=f"0/{len(ids)} documents") as bar:
        failed = asyncio.run(run(bar))
    if failed:
        raise CliError(f"{failed} of {len(ids)} documents failed")


def reingest(session: Session, args: argparse.Namespace) -> None:
    opened = asyncio.run(open_collection(session.services, args.collection))
    sources = [asyncio.run(documents_.kept_source(opened, document_id)) for document_id in args.documents]
    if failed := _report(sources, asyncio.run(documents_.ingest(opened, sources, force=True))):
        raise CliError(f"{failed} of {len(sources)} documents failed")


def documents(session: Session, args: argparse.Namespace) -> None:
    rows = asyncio.run(_documents(session.services, args.collection))
    if not rows:
        print(f"no documents in collection {args.collection!r}", file=sys.stderr)
    for info in rows:
        facts = f"{info.facts:6} facts" if info.facts is not None else " " * 12
        about = f"{info.title}, {info.media_type}" + (f", {info.pages} pages" if info.pages is not None else "")
        reason = f"  -- {info.error}" if info.error else ""
        print(f"{info.status:10} {info.chunks:5} chunks {facts}  {info.id}  ({about}){reason}")


async def _documents(services: Services, collection: str) -> list[DocumentInfo]:
    return await documents_.documents(await open_collection(services, collection))


def forget(session: Session, args: argparse.Namespace) -> None:
    asyncio.run(_forget(session.services, args.collection, args.document))
    print(f"forgot {args.document}")


async def _forget(services: Services, collection: str, document_id: str) -> None:
    await documents_.forget(await open_collection(services, collection), document_id)


def index(session: Session, args: argparse.Namespace) -> None:
    """Entities and facts of triples loaded into {base}graph/C (with `load --graph`) become
    groundable and scorable."""
    collection = asyncio.run(open_collection(session.services, args.collection))
    with _progress("indexing", "item") as progress:
        entities, facts = asyncio.run(entities_.index_graph(collection, on_progress=progress))
    print(f"indexed {entities} entity vectors and {facts} fact vectors in collection {args.collection!r}")


def reindex(session: Session, args: argparse.Namespace) -> None:
    """The derived indexes rebuilt from what the store holds: the store is the system of record."""
    services = session.services
    if args.collection:
        names = [asyncio.run(open_collection(services, args.collection)).name]
    else:
        names = [info.name for info in asyncio.run(collections_.listed(services, EVERYTHING))]
    for name in names:
        with _progress(f"reindexing {name}", "item") as progress:
            written = asyncio.run(entities_.reindex(services, name, on_progress=progress))
        print(f"reindexed collection {name!r}: {written} vectors")


def entities(session: Session, args: argparse.Namespace) -> None:
    """Prints the entity's aliases and merges (JSON) after the change."""
    collection = asyncio.run(open_collection(session.services, args.collection))
    if args.action == "merge":
        result = asyncio.run(entities_.merge(collection, request_of(EntityMerge, args)))
    elif args.action == "split":
        result = asyncio.run(entities_.split(collection, request_of(EntitySplit, args)))
    else:
        result = asyncio.run(entities_.aliases(collection, request_of(AliasesQuery, args)))
    print(json.dumps(asdict(result), indent=2, ensure_ascii=False))


@contextmanager
def _progress(description: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar on stderr, as the `on_progress(done, total)` callback the pipeline takes."""
    with tqdm(total=0, unit=unit, desc=description, file=sys.stderr) as bar:

        def update(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield update


def _jsonl_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """A corpus file's {"id", "title", "text"} lines (numbered), read one at a time."""
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, dict) or not isinstance(item.get("text"), str) or "id" not in item:
                    raise ValueError("not an object with an id and a text")
            except ValueError as error:
                raise CliError(f'{path}, line {number}: expected {{"id", "title", "text"}} ({error})') from None
            yield number, item


def _jsonl_ids(path: Path) -> list[str]:
    return [str(item["id"]) for _, item in _jsonl_lines(path)]


def _jsonl_documents(path: Path) -> Iterator[Source]:
    """A corpus file, one document a line."""
    for _, item in _jsonl_lines(path):
        title = item.get("title")
        text = f"{title or ''}\n\n{item['text']}".strip()
        yield Source(str(item["id"]), text.encode(), "text/plain", path.name, title)


def _read(named: list[tuple[str, Path]]) -> Iterator[Source]:
    for document_id, path in named:
        yield Source(document_id, path.read_bytes(), filename=path.name)


def _document_files(paths: list[Path]) -> list[tuple[str, Path]]:
    """(document id, file): a file is named by its name, a folder's files by their path inside it."""
    found: list[tuple[str, Path]] = []
    for path in paths:
        if path.is_dir():
            found += [(str(f.relative_to(path)), f) for f in sorted(path.rglob("*")) if f.suffix.lower() in EXTENSIONS]
        elif path.is_file():
            if why := documents_.rdf_refusal(path.name):
                raise CliError(why)
            found.append((path.name, path))
        else:
            raise CliError(f"no such file or folder: {path}")
    if not found:
        raise CliError(f"no documents found ({documents_.kinds()})")
    ids = [document_id for document_id, _ in found]
    if len(set(ids)) != len(ids):
        raise CliError("two files would get the same document id; ingest them separately")
    return found


def _report(sources: list[Source], results: list[Ingested]) -> int:
    """One line per document on stdout, above the progress bar (tqdm.write clears it first, so
    the two never share a line on a terminal); returns how many failed."""
    failed = 0
    for source, result in zip(sources, results):
        if isinstance(result, Exception):
            failed += 1
            line = f"failed     {source.document_id}: {result}"
        elif result.status == "unchanged":
            line = f"unchanged  {source.document_id}"
        else:
            line = (
                f"ready      {source.document_id}: {result.chunks_added} chunks added, {result.chunks_removed} "
                f"removed, {result.chunks_kept} kept, {result.facts} facts"
            )
        tqdm.write(line, file=sys.stdout)
    return failed
