"""`ontology load | list | show | remove`: the OWL ontologies extraction and nl-query work against."""

from __future__ import annotations

import argparse
import asyncio
import sys

from pyoxigraph import RdfFormat

from sparqlrag.cli.session import CliError, Session
from sparqlrag.operations import ontologies as operations
from sparqlrag.operations.ontologies import Ontologies


def ontology(session: Session, args: argparse.Namespace) -> None:
    ontologies = operations.registry(session.store, session.settings.base_iri)
    if args.action == "load":
        _load(ontologies, args)
    elif args.action == "list":
        for info in asyncio.run(operations.listed(ontologies)):
            print(f"{info.name:16} {info.classes:5} classes {info.properties:5} properties  {info.iri}")
    elif args.action == "show" and args.format:
        fmt = operations.FORMAT_NAMES[args.format]
        assert isinstance(fmt, RdfFormat), "the parser offers the RDF formats alone"
        sys.stdout.buffer.write(asyncio.run(operations.serialized(ontologies, args.name, fmt)))
    elif args.action == "show":
        _show(ontologies, args.name)
    else:
        asyncio.run(operations.remove(ontologies, args.name))
        print(f"removed {args.name}")


def _load(ontologies: Ontologies, args: argparse.Namespace) -> None:
    if not args.file.is_file():
        raise CliError(f"{args.file}: no such file")
    loading = operations.load(
        ontologies,
        args.name or args.file.stem,
        args.file.read_bytes(),
        filename=args.file.name,
        format=args.format,
        replace=args.replace,
    )
    result = asyncio.run(loading)
    info = result.info
    done = "unchanged" if result.unchanged else "reloaded" if result.replaced else "loaded"
    print(
        f"{done} {info.name}: {info.iri} ({info.classes} classes, {info.properties} properties, {info.triples} triples)"
    )
    for warning in result.warnings:
        print(f"  owlready2: {warning}", file=sys.stderr)


def _show(ontologies: Ontologies, name: str) -> None:
    info, model = asyncio.run(operations.shown(ontologies, name))
    print(f"{info.name}: {info.iri}, loaded {info.loaded}\n{info.classes} classes:")
    for cls in sorted(model.classes.values(), key=lambda c: c.iri):
        print(f"  {cls.iri}  {cls.label}" + (f"  < {', '.join(cls.parents)}" if cls.parents else ""))
    print(f"{info.properties} properties:")
    for prop in sorted(model.properties.values(), key=lambda p: p.iri):
        print(f"  {prop.iri}  ({prop.kind}) {' | '.join(prop.domain) or '*'} -> {' | '.join(prop.range) or '*'}")
