"""`sparqlrag serve | query | update | load | dump | ingest | documents | forget | ask | ontology | demo`.

query, update, load, dump, ingest, documents, forget, ask and ontology open the data directory directly; while a
server holds it they
stop with a clear error (use the server's HTTP endpoints instead).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from pydantic import ValidationError
from tqdm import tqdm

from sparqlrag.config import Settings, load_settings
from sparqlrag.library.librarian import CollectionBusy, UnknownCollection
from sparqlrag.ontology.owl import OntologyError
from sparqlrag.ontology.reading import FORMAT_NAMES as ONTOLOGY_FORMAT_NAMES
from sparqlrag.ontology.registry import OntologyConflict, UnknownOntology
from sparqlrag.store.base import StoreError
from sparqlrag.store.data_dir import prepare_data_dir
from sparqlrag.store.embedded import EmbeddedStore
from sparqlrag.store.formats import FORMAT_NAMES, rdf_format_for_path, rdf_format_names
from sparqlrag.store.vocab import InvalidName, Iris

if TYPE_CHECKING:
    from sparqlrag.extraction.plans import IngestResult, Source
    from sparqlrag.services import Models, Services

DEMO_QUESTION = "Where did the inventor of the World Wide Web invent it, and where is that?"


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 2."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="data directory (default ./data)")
    parser.add_argument("--config", type=Path, help="TOML settings file")
    parser.add_argument("--base-iri", help="base IRI of the knowledge server (default http://localhost:7878/)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparqlrag", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the HTTP server (SPARQL Protocol, Graph Store, API)")
    _common(serve)
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 7878)")
    serve.add_argument("--insecure", action="store_true", default=None, help="allow a non-loopback bind without tokens")
    serve.add_argument("--access-log", action="store_true", help="log every request")

    query = commands.add_parser("query", help="run a SPARQL query on the data directory")
    _common(query)
    query.add_argument("sparql", help="the query text, @FILE to read it from a file, or - for stdin")
    query.add_argument("--format", choices=list(FORMAT_NAMES), help="output format (default json / turtle)")
    query.add_argument(
        "--no-union", action="store_true", help="query the real default graph, not the union of all graphs"
    )

    update = commands.add_parser("update", help="run a SPARQL update on the data directory")
    _common(update)
    update.add_argument("sparql", help="the update text, @FILE to read it from a file, or - for stdin")

    load = commands.add_parser("load", help="load RDF files (Turtle, TriG, N-Triples, N-Quads, RDF/XML, JSON-LD)")
    _common(load)
    load.add_argument("files", nargs="+", type=Path)
    load.add_argument("--graph", help="graph IRI for triple formats (default: the default graph)")
    load.add_argument("--format", choices=rdf_format_names(), help="format of every file (default: from the extension)")
    load.add_argument(
        "--replace", action="store_true", help="replace the target graph (or the dataset, for quad files)"
    )

    dump = commands.add_parser("dump", help="write the dataset or one graph to stdout or a file")
    _common(dump)
    dump.add_argument(
        "--format", choices=rdf_format_names(), default=None, help="default trig (dataset) / turtle (graph)"
    )
    dump.add_argument("--graph", help="one graph IRI, or DEFAULT for the default graph")
    dump.add_argument("--output", "-o", type=Path, help="file to write (default stdout)")

    ingest = commands.add_parser(
        "ingest", help="add or update documents (text, Markdown, HTML, PDF; folders are walked)"
    )
    _common(ingest)
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.add_argument("--collection", default="default")
    ingest.add_argument(
        "--triples",
        type=Path,
        help="pre-extracted triples JSONL (passage_id, entities, triples) "
        "to use instead of an extractor; documents are named by passage id",
    )

    documents = commands.add_parser("documents", help="list the documents of a collection")
    _common(documents)
    documents.add_argument("--collection", default="default")

    forget = commands.add_parser("forget", help="delete a document, its chunks and the facts only it supported")
    _common(forget)
    forget.add_argument("document", help="the document id (as `sparqlrag documents` shows it)")
    forget.add_argument("--collection", default="default")

    ask = commands.add_parser("ask", help="answer a question from a collection, with its sources and trace")
    _common(ask)
    ask.add_argument("question")
    ask.add_argument(
        "--mode",
        choices=["hybrid", "graph", "document"],
        default="hybrid",
        help="hybrid (default): passages by dense and keyword search, re-ranked by the facts the graph walk "
        "finds, answered from both; graph: the same without keyword search; document: passages only",
    )
    ask.add_argument("--collection", default="default")
    ask.add_argument("--k", type=int, default=5, help="passages to use (default 5)")
    ask.add_argument(
        "--explain", action="store_true", help="also print concepts, seeds and the facts used, with scores"
    )

    nl = commands.add_parser(
        "nl-query", help="a question written as SPARQL over an ontology by the LLM, checked, then run"
    )
    _common(nl)
    nl.add_argument("question")
    nl.add_argument("--collection", default="default")
    nl.add_argument(
        "--ontology", help="the ontology to write it against (default: the collection's, or the only one loaded)"
    )

    index = commands.add_parser("index", help="index the labelled entities of a loaded knowledge graph for Graph RAG")
    _common(index)
    index.add_argument("--collection", default="default")

    entities = commands.add_parser(
        "entities", help="correct entity resolution: join two things, split an alias off, list aliases"
    )
    entity_actions = entities.add_subparsers(dest="action", required=True)
    merging = entity_actions.add_parser(
        "merge", help="OTHER is ENTITY: its IRI becomes an alias, its facts move to ENTITY"
    )
    splitting = entity_actions.add_parser(
        "split", help="ALIAS names something else than ENTITY: kept apart from now on"
    )
    listing = entity_actions.add_parser("aliases", help="an entity's other names, and the evidence that joined each")
    for action, last in ((merging, "other"), (splitting, "alias"), (listing, None)):
        _common(action)
        action.add_argument("entity", help="an entity IRI, or a name only one thing of the collection has")
        if last:
            action.add_argument(last)
        action.add_argument("--collection", default="default")

    reingest = commands.add_parser(
        "reingest", help="extract documents again (after changing the extractor, model or prompts)"
    )
    _common(reingest)
    reingest.add_argument("documents", nargs="+", help="document ids (as `sparqlrag documents` shows them)")
    reingest.add_argument("--collection", default="default")

    collections = commands.add_parser("collections", help="list, create or delete collections")
    _common(collections)
    collections.add_argument("action", nargs="?", choices=["list", "create", "delete"], default="list")
    collections.add_argument("name", nargs="?", help="the collection to create or delete")
    collections.add_argument(
        "--ontology", help="create: a loaded ontology to guide extraction (typed entities, its properties)"
    )

    core = commands.add_parser("core", help="export a collection as a knowledge core file, or import one")
    core_actions = core.add_subparsers(dest="action", required=True)
    exporting = core_actions.add_parser(
        "export", help="write a collection's knowledge, provenance, traces and vectors to one file"
    )
    _common(exporting)
    exporting.add_argument("collection")
    exporting.add_argument(
        "file", type=Path, help="the core file to write (a zip; default name COLLECTION.core.zip)", nargs="?"
    )
    importing = core_actions.add_parser(
        "import", help="import a knowledge core into a new or empty collection (no extraction)"
    )
    _common(importing)
    importing.add_argument("file", type=Path)

    ontology = commands.add_parser("ontology", help="load, list, show or remove OWL ontologies")
    actions = ontology.add_subparsers(dest="action", required=True)
    loading = actions.add_parser(
        "load", help="load or reload an ontology (Turtle, N-Triples, RDF/XML, OWL/XML, JSON-LD)"
    )
    _common(loading)
    loading.add_argument("file", type=Path)
    loading.add_argument("--name", help="the name to load it under (default: the file name without extension)")
    loading.add_argument(
        "--format", choices=list(ONTOLOGY_FORMAT_NAMES), help="default: from the extension or the content"
    )
    loading.add_argument("--replace", action="store_true", help="let the name take a different ontology than it holds")
    _common(actions.add_parser("list", help="the loaded ontologies"))
    showing = actions.add_parser(
        "show", help="an ontology's classes and properties, or the ontology itself with --format"
    )
    _common(showing)
    showing.add_argument("name")
    showing.add_argument(
        "--format", choices=["turtle", "ntriples", "rdfxml", "jsonld"], help="print the ontology in this format"
    )
    removing = actions.add_parser("remove", help="remove an ontology (its graph and registration)")
    _common(removing)
    removing.add_argument("name")

    demo = commands.add_parser("demo", help="ingest the demo corpus, answer a question with its sources, then serve")
    _common(demo)
    demo.add_argument("--question", default=DEMO_QUESTION)
    demo.add_argument("--port", type=int)
    demo.add_argument("--no-serve", action="store_true", help="stop after printing the answer")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    try:
        return load_settings(
            args.config,
            data_dir=args.data_dir,
            base_iri=args.base_iri,
            host=getattr(args, "host", None),
            port=getattr(args, "port", None),
            insecure=getattr(args, "insecure", None),
        )
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise CliError(f"invalid settings: {problems}") from None
    except ValueError as error:
        raise CliError(str(error)) from None


@contextmanager
def _open_store(settings: Settings) -> Iterator[EmbeddedStore]:
    prepare_data_dir(settings.data_dir, settings.base_iri)
    store = EmbeddedStore(settings.store_path, allow_remote=settings.allow_remote)
    try:
        yield store
    finally:
        store.close()


def _text_argument(value: str) -> str:
    if value == "-":
        return sys.stdin.read()
    if value.startswith("@"):
        path = Path(value[1:])
        if not path.is_file():
            raise CliError(f"no such file: {path}")
        return path.read_text(encoding="utf-8")
    return value


def _accept_for(name: str | None) -> str | None:
    if name is None:
        return None
    fmt = FORMAT_NAMES[name]
    return fmt.media_type.split(";")[0]


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


def _load(store: EmbeddedStore, settings: Settings, args: argparse.Namespace) -> None:
    for path in args.files:
        if not path.is_file():
            raise CliError(f"no such file: {path}")
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
            store.load(
                _ProgressReader(file, bar),
                fmt,
                graph=args.graph,
                base_iri=settings.base_iri,
                replace=args.replace,
                bulk=bulk,
            )
        print(f"loaded {path} ({fmt.name}{', bulk' if bulk else ''})", file=sys.stderr)


def _dump(store: EmbeddedStore, args: argparse.Namespace) -> None:
    graph = "all" if args.graph is None else (None if args.graph == "DEFAULT" else args.graph)
    fmt = FORMAT_NAMES[args.format or ("trig" if graph == "all" else "turtle")]
    if args.output:
        store.dump(args.output, fmt, graph)  # type: ignore[arg-type]
    else:
        store.dump(sys.stdout.buffer, fmt, graph)  # type: ignore[arg-type]


def _jsonl_documents(path: Path) -> list[Source]:
    """A corpus file of {"id", "title", "text"} lines, one document a line."""
    import json

    from sparqlrag.extraction.plans import Source

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
    from sparqlrag.extraction.decoders import EXTENSIONS

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


def _ingest(services: Services, args: argparse.Namespace) -> None:
    from sparqlrag.extraction.plans import Source

    pipeline = services.pipeline
    for result in asyncio.run(pipeline.recover()):
        print(
            f"recovered  {result}" if isinstance(result, Exception) else f"recovered  {result.document}",
            file=sys.stderr,
        )
    corpora = [p for p in args.paths if p.suffix == ".jsonl" and p.is_file()]
    files = [p for p in args.paths if p not in corpora]
    sources = [s for corpus in corpora for s in _jsonl_documents(corpus)]
    if files or not sources:
        sources += [
            Source(document_id, path.read_bytes(), filename=path.name) for document_id, path in _document_files(files)
        ]
    with tqdm(total=0, unit="chunk", desc="extracting", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        results = asyncio.run(pipeline.ingest_many(args.collection, sources, on_progress=progress))
    _report(sources, results)


def _report(sources: list[Source], results: list[IngestResult | Exception]) -> None:
    """One line per document; exit 2 when any failed."""
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
                f"removed, "
                f"{result.chunks_kept} kept, {result.facts} facts"
            )
    if failed:
        raise CliError(f"{failed} of {len(sources)} documents failed")


def _extractor_override(args: argparse.Namespace) -> Any:
    """Pre-extracted triples (--triples), read and checked before anything is ingested."""
    if getattr(args, "triples", None) is None:
        return None
    from sparqlrag.extraction.triples_import import PreExtracted, TriplesFormatError, read_triples

    if not args.triples.is_file():
        raise CliError(f"no such file: {args.triples}")
    try:
        return PreExtracted(read_triples(args.triples))
    except TriplesFormatError as error:
        raise CliError(f"{args.triples}: {error}") from None


def _ask(services: Services, args: argparse.Namespace) -> None:
    from sparqlrag.library import librarian
    from sparqlrag.retrieval.walk import EmptyGraph, GraphRagOptions
    from sparqlrag.store.vocab import local_name

    if not librarian.collection_exists(services.store, Iris(services.settings.base_iri, args.collection)):
        raise UnknownCollection(args.collection)
    try:
        options = GraphRagOptions(k=args.k)
        if args.mode == "document":
            answer = asyncio.run(services.document_rag.answer(args.collection, args.question, k=args.k))
            text, passages, trace, explained = answer.answer, answer.passages, answer.trace, None
        else:
            explained = asyncio.run(services.graph_rag.answer(args.collection, args.question, options, args.mode))
            text, passages, trace = explained.answer, explained.passages, explained.trace
    except (ValueError, EmptyGraph) as error:
        raise CliError(str(error)) from None
    print(text.strip() + "\n")
    if explained is not None and args.explain:
        print("Concepts: " + "; ".join(explained.concepts))
        print("Seeds:    " + "; ".join(f"{local_name(s.entity)} ({s.score:.2f})" for s in explained.seeds[:10]))
        print(f"Facts ({len(explained.edges)} kept of {explained.explored} explored):")
        for edge in explained.edges[:15]:
            print(
                f"  {edge.score:5.2f}  hop {edge.hop}  {edge.text}" + (f"  (via: {edge.via.text})" if edge.via else "")
            )
        print()
    print("Sources:" if passages else "Sources: none")
    for number, passage in enumerate(passages, start=1):
        snippet = " ".join(passage.text.split())
        print(f"  [{number}] {passage.title}: {snippet[:150]}{'...' if len(snippet) > 150 else ''}")
    print(f"\nTrace: {trace}")


def _nl_query(services: Services, args: argparse.Namespace) -> None:
    from sparqlrag.queries.nl_query import NlQueryUnavailable, QueryRejected

    def run(query: str, form: str) -> Any:
        accept = "text/turtle" if form == "construct" else "text/tab-separated-values"
        return services.store.query(query, accept=accept, union_default_graph=services.settings.union_default_graph)

    if not asyncio.run(services.collections.exists(args.collection)):
        raise UnknownCollection(args.collection)
    try:
        answer = asyncio.run(
            services.nl_query.ask(args.question, run, collection=args.collection, ontology=args.ontology)
        )
    except NlQueryUnavailable as error:
        raise CliError(str(error)) from None
    except QueryRejected as error:
        raise CliError(f"{error}\n{error.query}") from None
    except ValueError as error:
        raise CliError(str(error)) from None
    print(answer.query + "\n")
    sys.stdout.buffer.write(answer.result.body)


def _index(services: Services, args: argparse.Namespace) -> None:
    """Entities and facts of triples loaded into {base}graph/C (with `load --graph`) become
    groundable and scorable."""
    with tqdm(total=0, unit="item", desc="indexing", file=sys.stderr) as bar:

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        entities, facts = asyncio.run(services.pipeline.indexer.index_graph(args.collection, on_progress=progress))
    print(f"indexed {entities} entity vectors and {facts} fact vectors in collection {args.collection!r}")


def _entities(services: Services, args: argparse.Namespace) -> None:
    """Prints the entity's aliases and merges (JSON) after the change."""
    from sparqlrag.extraction.curation import CurationRefused, UnknownEntity

    curation = services.curation
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


def _reingest(services: Services, args: argparse.Namespace) -> None:
    pipeline = services.pipeline
    try:
        sources = [asyncio.run(pipeline.kept_source(args.collection, document_id)) for document_id in args.documents]
    except LookupError as error:
        raise CliError(str(error)) from None
    _report(sources, asyncio.run(pipeline.ingest_many(args.collection, sources, force=True)))


def _collections(services: Services, args: argparse.Namespace) -> None:
    collections = services.collections
    if args.action != "list" and not args.name:
        raise CliError(f"collections {args.action} needs a collection name")
    if args.action == "create":
        if args.ontology:
            services.ontologies.info_sync(args.ontology)  # UnknownOntology if it is not loaded
        if not asyncio.run(collections.create(args.name, args.ontology)):
            raise CliError(f"collection {args.name!r} exists already")
        print(f"created {args.name}")
    elif args.action == "delete":
        if not asyncio.run(collections.delete(args.name)):
            raise UnknownCollection(args.name)
        print(f"deleted {args.name}")
    else:
        for info in asyncio.run(collections.list()):
            print(f"{info.name:20} {info.documents:6} documents {info.chunks:7} chunks {info.facts:9} triples")


def _ontology(store: EmbeddedStore, settings: Settings, args: argparse.Namespace) -> None:
    from sparqlrag.ontology.registry import Ontologies

    ontologies = Ontologies(store, settings.base_iri)
    if args.action == "load":
        if not args.file.is_file():
            raise CliError(f"{args.file}: no such file")
        fmt = ONTOLOGY_FORMAT_NAMES[args.format] if args.format else None
        result = ontologies.load_sync(
            args.name or args.file.stem,
            args.file.read_bytes(),
            filename=args.file.name,
            format=fmt,
            replace=args.replace,
        )
        info = result.info
        done = "unchanged" if result.unchanged else "reloaded" if result.replaced else "loaded"
        print(
            f"{done} {info.name}: {info.iri} ({info.classes} classes, {info.properties} properties, {info.triples} "
            f"triples)"
        )
        for warning in result.warnings:
            print(f"  owlready2: {warning}", file=sys.stderr)
    elif args.action == "list":
        for info in ontologies.list_sync():
            print(f"{info.name:16} {info.classes:5} classes {info.properties:5} properties  {info.iri}")
    elif args.action == "show" and args.format:
        sys.stdout.buffer.write(ontologies.serialize_sync(args.name, ONTOLOGY_FORMAT_NAMES[args.format]))  # type: ignore[arg-type]
    elif args.action == "show":
        info, model = ontologies.info_sync(args.name), ontologies.model_sync(args.name)
        print(f"{info.name}: {info.iri}, loaded {info.loaded}\n{info.classes} classes:")
        for cls in sorted(model.classes.values(), key=lambda c: c.iri):
            print(f"  {cls.iri}  {cls.label}" + (f"  < {', '.join(cls.parents)}" if cls.parents else ""))
        print(f"{info.properties} properties:")
        for prop in sorted(model.properties.values(), key=lambda p: p.iri):
            print(f"  {prop.iri}  ({prop.kind}) {' | '.join(prop.domain) or '*'} -> {' | '.join(prop.range) or '*'}")
    else:
        ontologies.remove_sync(args.name)
        print(f"removed {args.name}")


def _core(services: Services, args: argparse.Namespace) -> None:
    from sparqlrag.library.cores import CoreInvalid, CoreMismatch

    try:
        _core_action(services, args)
    except (CoreInvalid, CoreMismatch) as error:
        raise CliError(str(error)) from None


def _core_action(services: Services, args: argparse.Namespace) -> None:
    if args.action == "export":
        target = args.file or Path(f"{args.collection}.core.zip")
        try:
            manifest = asyncio.run(services.cores.export(args.collection, target))
        except OSError as error:
            raise CliError(f"cannot write {target}: {error.strerror}") from None
        counts = manifest["counts"]
        print(
            f"exported {args.collection} to {target}: {counts['quads']} quads, {counts['chunks']} chunk vectors, "
            f"{counts['entities']} entity vectors"
        )
    else:
        if not args.file.is_file():
            raise CliError(f"{args.file}: no such file")
        result = asyncio.run(services.cores.import_(args.file))
        moved = f" (IRIs moved from {result.rebased_from})" if result.rebased_from else ""
        print(
            f"imported {result.collection}: {result.quads} quads, {result.chunks} chunk vectors, {result.entities} "
            f"entity vectors{moved}"
        )


def _documents(services: Services, args: argparse.Namespace) -> None:
    from sparqlrag.library import librarian

    iris = Iris(services.settings.base_iri, args.collection)
    if not librarian.collection_exists(services.store, iris):
        raise UnknownCollection(args.collection)
    rows = librarian.documents(services.store, iris)
    if not rows:
        print(f"no documents in collection {args.collection!r}", file=sys.stderr)
    for info in rows:
        print(f"{info.status:10} {info.chunks:5} chunks  {info.id}  ({info.title}, {info.media_type})")


def _forget(services: Services, args: argparse.Namespace) -> None:
    if not asyncio.run(services.pipeline.forget(args.collection, args.document)):
        raise CliError(f"no document {args.document!r} in collection {args.collection!r}")
    print(f"forgot {args.document}")


def _load_models(settings: Settings) -> Models:
    from sparqlrag.models.embedder import ModelUnavailable
    from sparqlrag.models.llm import LLMError
    from sparqlrag.services import Models

    try:
        return Models.load(settings)
    except (ValueError, LLMError, ModelUnavailable) as error:  # configuration the user can fix
        raise CliError(str(error)) from None


def _serve(settings: Settings, access_log: bool) -> None:
    import uvicorn

    from sparqlrag.server.app import create_app

    try:
        settings.check_bind_address()
    except ValueError as error:
        raise CliError(str(error)) from None
    models = _load_models(settings)
    url = f"http://{settings.host}:{settings.port}/"
    print(
        f"sparqlrag serving {settings.data_dir}: SPARQL editor {url}, ask page {url}ask, endpoint {url}sparql",
        file=sys.stderr,
    )
    uvicorn.run(
        create_app(settings, models), host=settings.host, port=settings.port, access_log=access_log, log_level="info"
    )


def _demo(settings: Settings, args: argparse.Namespace) -> None:
    """The main job on the embedded defaults: ingest the shipped corpus (unchanged files are
    skipped on later runs), answer by Graph RAG with sources and trace, then serve. With
    ANTHROPIC_API_KEY set (and no LLM configured) Claude answers; extraction stays as configured."""
    from sparqlrag.services import Services

    if settings.llm == "none" and os.environ.get("ANTHROPIC_API_KEY"):
        settings = settings.model_copy(update={"llm": "anthropic"})
    corpus = resources.files("sparqlrag") / "demo" / "corpus"
    with resources.as_file(corpus) as folder, _open_store(settings) as store:
        services = Services.open(settings, store, None, _load_models(settings))
        try:
            args.paths, args.collection = [folder], "default"
            _ingest(services, args)
            print(f"\nQuestion: {args.question}\n")
            _ask(
                services,
                argparse.Namespace(question=args.question, mode="hybrid", collection="default", k=3, explain=True),
            )
        finally:
            services.close()
    if not args.no_serve:
        url = f"http://{settings.host}:{settings.port}/"
        print(
            f"\nOpen {url} for the SPARQL editor, {url}ask to ask questions, or point any SPARQL client at "
            f"{url}sparql. Ctrl-C stops."
        )
        _serve(settings, access_log=False)


def run(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    settings = _settings(args)
    if args.command == "serve":
        _serve(settings, args.access_log)
    elif args.command == "demo":
        _demo(settings, args)
    else:
        with _open_store(settings) as store:
            if args.command == "query":
                result = store.query(
                    _text_argument(args.sparql),
                    accept=_accept_for(args.format),
                    base_iri=settings.base_iri,
                    union_default_graph=settings.union_default_graph and not args.no_union,
                )
                sys.stdout.buffer.write(result.body)
                if not result.body.endswith(b"\n"):
                    sys.stdout.buffer.write(b"\n")
            elif args.command == "update":
                store.update(_text_argument(args.sparql), base_iri=settings.base_iri)
            elif args.command == "load":
                _load(store, settings, args)
            elif args.command == "dump":
                _dump(store, args)
            elif args.command == "ontology":
                _ontology(store, settings, args)
            else:  # the commands that need models load them only now (they take seconds to import)
                from sparqlrag.services import Services

                services = Services.open(settings, store, _extractor_override(args), _load_models(settings))
                try:
                    commands = {
                        "ingest": _ingest,
                        "documents": _documents,
                        "forget": _forget,
                        "reingest": _reingest,
                        "collections": _collections,
                        "core": _core,
                        "ask": _ask,
                        "index": _index,
                        "nl-query": _nl_query,
                        "entities": _entities,
                    }
                    commands[args.command](services, args)
                finally:
                    services.close()


def main(argv: list[str] | None = None) -> None:
    try:
        run(argv)
    except (
        CliError,
        StoreError,
        InvalidName,
        UnknownCollection,
        CollectionBusy,
        OntologyError,
        OntologyConflict,
        UnknownOntology,
    ) as error:
        print(f"sparqlrag: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        raise SystemExit(130) from None
