"""`collections list | create | delete` and `core export | import`: what the library keeps."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from sparqlrag.cli.session import CliError, Session, request_of
from sparqlrag.operations import collections as operations
from sparqlrag.operations.access import EVERYTHING
from sparqlrag.operations.requests import NewCollection


def collections(session: Session, args: argparse.Namespace) -> None:
    services = session.services
    if args.action != "list" and not args.name:
        raise CliError(f"collections {args.action} needs a collection name")
    if args.action == "create":
        created = asyncio.run(operations.create(services, request_of(NewCollection, args), EVERYTHING))
        print(f"created {created.name}")
    elif args.action == "delete":
        print(asyncio.run(operations.delete(services, args.name)))
    else:
        for info in asyncio.run(operations.listed(services, EVERYTHING)):
            print(f"{info.name:20} {info.documents:6} documents {info.chunks:7} chunks {info.facts:9} triples")


def core(session: Session, args: argparse.Namespace) -> None:
    if args.action == "export":
        _export(session, args.collection, args.file or _default_core_file(args.collection))
    else:
        _import(session, args.file, args.collection)


def _default_core_file(collection: str) -> Path:
    """COLLECTION.core.zip in the current folder, never replacing a file the user did not name."""
    target = Path(f"{collection}.core.zip").absolute()
    if target.exists():
        raise CliError(f"{target} exists already: name the file to write (a named file is replaced)")
    return target


def _export(session: Session, collection: str, target: Path) -> None:
    try:
        manifest = asyncio.run(operations.export_core(session.services, collection, target))
    except OSError as error:
        raise CliError(f"cannot write {target}: {error.strerror}") from None
    counts = manifest["counts"]
    print(  # on stderr, as every status line: stdout stays for what a command answers
        f"exported {collection} to {target}: {counts['quads']} quads, {counts['chunks']} chunk vectors, "
        f"{counts['entities']} entity vectors",
        file=sys.stderr,
    )


def _import(session: Session, file: Path, into: str | None) -> None:
    if not file.is_file():
        raise CliError(f"{file}: no such file")
    result = asyncio.run(operations.import_core(session.services, file, into))
    moved = f" (IRIs moved from {result.rebased_from})" if result.rebased_from else ""
    moved += f" (exported as {result.renamed_from})" if result.renamed_from else ""
    print(
        f"imported {result.collection}: {result.quads} quads, {result.chunks} chunk vectors, {result.entities} "
        f"entity vectors{moved}"
    )
