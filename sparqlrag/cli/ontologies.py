"""`ontology load | list | show | remove`: the OWL ontologies extraction and nl-query work against."""

from __future__ import annotations

import argparse
import sys

from sparqlrag.cli.session import CliError, Session
from sparqlrag.ontology.reading import FORMAT_NAMES
from sparqlrag.ontology.registry import Ontologies


def ontology(session: Session, args: argparse.Namespace) -> None:
    ontologies = Ontologies(session.store, session.settings.base_iri)
    if args.action == "load":
        _load(ontologies, args)
    elif args.action == "list":
        for info in ontologies.list_sync():
            print(f"{info.name:16} {info.classes:5} classes {info.properties:5} properties  {info.iri}")
    elif args.action == "show" and args.format:
        sys.stdout.buffer.write(ontologies.serialize_sync(args.name, FORMAT_NAMES[args.format]))  # type: ignore[arg-type]
    elif args.action == "show":
        _show(ontologies, args.name)
    else:
        ontologies.remove_sync(args.name)
        print(f"removed {args.name}")


def _load(ontologies: Ontologies, args: argparse.Namespace) -> None:
    if not args.file.is_file():
        raise CliError(f"{args.file}: no such file")
    result = ontologies.load_sync(
        args.name or args.file.stem,
        args.file.read_bytes(),
        filename=args.file.name,
        format=FORMAT_NAMES[args.format] if args.format else None,
        replace=args.replace,
    )
    info = result.info
    done = "unchanged" if result.unchanged else "reloaded" if result.replaced else "loaded"
    print(
        f"{done} {info.name}: {info.iri} ({info.classes} classes, {info.properties} properties, {info.triples} triples)"
    )
    for warning in result.warnings:
        print(f"  owlready2: {warning}", file=sys.stderr)


def _show(ontologies: Ontologies, name: str) -> None:
    info, model = ontologies.info_sync(name), ontologies.model_sync(name)
    print(f"{info.name}: {info.iri}, loaded {info.loaded}\n{info.classes} classes:")
    for cls in sorted(model.classes.values(), key=lambda c: c.iri):
        print(f"  {cls.iri}  {cls.label}" + (f"  < {', '.join(cls.parents)}" if cls.parents else ""))
    print(f"{info.properties} properties:")
    for prop in sorted(model.properties.values(), key=lambda p: p.iri):
        print(f"  {prop.iri}  ({prop.kind}) {' | '.join(prop.domain) or '*'} -> {' | '.join(prop.range) or '*'}")
