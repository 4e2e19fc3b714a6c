"""The `sparqlrag` command line: every command, its arguments and its help."""

from __future__ import annotations

import argparse
from pathlib import Path

from sparqlrag.cli.table import TABLE
from sparqlrag.operations.requests import (
    DEFAULT_GRAPH_MODE,
    GRAPH_MODES,
    ONTOLOGY_FORMAT_NAMES,
    GraphRagRequest,
    document_kinds,
)
from sparqlrag.store.formats import FORMAT_NAMES, rdf_format_names
from sparqlrag.store.vocab import DEFAULT_COLLECTION

DEMO_QUESTION = "Where did the inventor of the World Wide Web invent it, and where is that?"
DIRECT = """Every command but serve opens the data directory directly; while a server holds it, they stop with a clear
error (use the server's HTTP endpoints, or its /mcp, instead). `sparqlrag COMMAND --help` tells more."""


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="data directory (default ./data)")
    parser.add_argument("--config", type=Path, help="TOML settings file")
    parser.add_argument(
        "--base-iri",
        help="base IRI of the knowledge server (default: the one the data directory was made with, else "
        "http://localhost:PORT/, PORT 7878 unless --port says)",
    )
    parser.add_argument("--store-url", help="a SPARQL endpoint to keep everything in (default: the data directory)")
    parser.add_argument("--store-update-url", help="the store's SPARQL Update endpoint, if not --store-url")
    parser.add_argument("--store-gsp-url", help="the store's Graph Store Protocol endpoint (default: INSERT DATA)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparqlrag",
        description="A knowledge server: documents into an RDF knowledge graph with provenance, questions answered by "
        "Graph RAG and Document RAG, everything queryable through SPARQL.",
        epilog=DIRECT,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    serve = commands.add_parser("serve", help="run the HTTP server (SPARQL Protocol, Graph Store, API)")
    _common(serve)
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 7878)")
    serve.add_argument("--insecure", action="store_true", default=None, help="allow a non-loopback bind without tokens")
    serve.add_argument("--access-log", action="store_true", help="log every request")

    mcp = commands.add_parser(
        "mcp",
        help="run the MCP server on stdio for an assistant (Claude Desktop, Claude Code); "
        "SPARQLRAG_TOKEN names its token when tokens are set",
    )
    _common(mcp)

    query = commands.add_parser("query", help="run a SPARQL query on the data directory")
    _common(query)
    query.add_argument(
        "sparql",
        help="the query text, @FILE to read it from a file, or - for stdin; SERVICE sr:documentRag and "
        'sr:graphRag blocks search and answer inside it (README, "Retrieval inside SPARQL")',
    )
    query.add_argument(
        "--format",
        choices=[*FORMAT_NAMES, TABLE],
        help="output format (default: a table on a terminal; json for SELECT and ASK, turtle for CONSTRUCT and "
        "DESCRIBE when piped)",
    )
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
    dump.add_argument(
        "--rdf11",
        action="store_true",
        help="write each fact reifier as RDF 1.1 reification (rdf:subject, rdf:predicate, rdf:object), for tools "
        "that cannot read RDF 1.2 triple terms",
    )

    ingest = commands.add_parser(
        "ingest", help=f"add or update documents ({document_kinds()}; folders are walked, JSONL corpora read)"
    )
    _common(ingest)
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.add_argument("--collection", default=DEFAULT_COLLECTION)
    ingest.add_argument(
        "--triples",
        type=Path,
        help="pre-extracted triples JSONL (passage_id, entities, triples) "
        "to use instead of an extractor; documents are named by passage id",
    )

    documents = commands.add_parser("documents", help="list the documents of a collection")
    _common(documents)
    documents.add_argument("--collection", default=DEFAULT_COLLECTION)

    forget = commands.add_parser("forget", help="delete a document, its chunks and the facts only it supported")
    _common(forget)
    forget.add_argument("document", help="the document id (as `sparqlrag documents` shows it)")
    forget.add_argument("--collection", default=DEFAULT_COLLECTION)

    ask = commands.add_parser("ask", help="answer a question from a collection, with its sources and trace")
    _common(ask)
    ask.add_argument("question")
    ask.add_argument(
        "--mode",
        choices=[*GRAPH_MODES, "document"],
        default=DEFAULT_GRAPH_MODE,
        help="evidence (default): Document RAG's passages, then bridge passages the graph walk reached, and the "
        "walk's facts; pagerank: passages by personalized PageRank over the graph index, seeded by the facts "
        "nearest the question and by hybrid search; hybrid: passages by dense and keyword search, re-ranked by "
        "the facts the graph walk finds; graph: the same without keyword search (each answers from the walk's "
        "facts and the passages); document: passages only",
    )
    ask.add_argument("--collection", default=DEFAULT_COLLECTION)
    ask.add_argument("--k", type=int, help=f"passages to use (default {GraphRagRequest.model_fields['k'].default})")
    ask.add_argument(
        "--bridges",
        type=int,
        help="evidence mode: passages the graph may add after the k "
        f"(default {GraphRagRequest.model_fields['bridges'].default}; 0: none)",
    )
    ask.add_argument(
        "--explain", action="store_true", help="also print concepts, seeds and the facts used, with scores"
    )
    ask.add_argument(
        "--document",
        dest="documents",
        action="append",
        metavar="ID",
        help="answer from this document alone (repeat for several)",
    )
    ask.add_argument(
        "--scope",
        metavar="PATTERN",
        help="answer from the documents this SPARQL group pattern binds to ?document, "
        "e.g. '?document dcterms:title \"Annual report\"'",
    )

    nl = commands.add_parser(
        "nl-query", help="a question written as SPARQL over an ontology by the LLM, checked, then run"
    )
    _common(nl)
    nl.add_argument("question")
    nl.add_argument("--collection", default=DEFAULT_COLLECTION)
    nl.add_argument(
        "--ontology", help="the ontology to write it against (default: the collection's, or the only one loaded)"
    )

    index = commands.add_parser("index", help="index the labelled entities of a loaded knowledge graph for Graph RAG")
    _common(index)
    index.add_argument("--collection", default=DEFAULT_COLLECTION)

    reindex = commands.add_parser(
        "reindex", help="rebuild the vector and keyword indexes from the store (after they were lost or moved)"
    )
    _common(reindex)
    reindex.add_argument("--collection", help="one collection (default: every collection)")

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
        action.add_argument("--collection", default=DEFAULT_COLLECTION)

    reingest = commands.add_parser(
        "reingest", help="extract documents again (after changing the extractor, model or prompts)"
    )
    _common(reingest)
    reingest.add_argument("documents", nargs="+", help="document ids (as `sparqlrag documents` shows them)")
    reingest.add_argument("--collection", default=DEFAULT_COLLECTION)

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
    importing.add_argument(
        "--collection", help="import it under this name (default: the collection it was exported from)"
    )

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
