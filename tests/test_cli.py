"""The command line, run as a user would: the installed `sparqlrag` script in a subprocess."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sparqlrag.cli import COMMANDS, command
from sparqlrag.cli.parser import build_parser
from sparqlrag.cli.serving import elsewhere
from sparqlrag.config import Settings
from sparqlrag.store import WorkerStore
from tests.conftest import SPARQLRAG, TEST_DATA

TRIG = b"""@prefix ex: <http://example.org/> .
ex:s ex:p "default" .
ex:g { ex:s ex:p "named" . ex:r <http://www.w3.org/1999/02/22-rdf-syntax-ns#reifies> <<( ex:s ex:p "named" )>> . }
"""


def cli(data_dir: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SPARQLRAG, *args, "--data-dir", str(data_dir)], input=stdin, capture_output=True, text=True, timeout=120
    )


def test_every_command_of_the_parser_has_a_function_and_no_other() -> None:
    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert commands is not None and set(commands) == set(COMMANDS)
    assert all(callable(command(name)) for name in COMMANDS)


def on_a_terminal(*command: str, env: dict[str, str] | None = None) -> str:
    """What a command shows a person: its stdout and stderr through one pseudo-terminal (which
    writes each newline as CRLF)."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # 40 rows of 160 columns
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal, env=env)
    os.close(terminal)
    shown = bytearray()
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the command has ended and closed the terminal
            break
        if not data:
            break
        shown += data
    os.close(main)
    assert process.wait(timeout=120) == 0, shown.decode(errors="replace")
    return shown.decode(errors="replace")


def test_the_top_level_help_lists_every_command_once_with_what_it_does() -> None:
    shown = subprocess.run([SPARQLRAG, "--help"], capture_output=True, text=True, timeout=60).stdout
    assert shown.startswith("usage: sparqlrag [-h] COMMAND ...")  # not a brace list of 19 names
    section = shown.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^ {4}(\S+)", section, flags=re.MULTILINE)
    assert listed == list(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr, arg-type]
    assert set(listed) == set(COMMANDS)
    assert "Every command but serve opens the data directory directly" in shown
    assert ".txt, .md, .html, .pdf, .docx" in section  # what `ingest` reads, DOCX too (issue 53)


def test_on_a_terminal_query_shows_a_table_and_ingest_keeps_its_lines_off_the_progress_bar(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "data.trig").write_bytes(TRIG)
    assert cli(data, "load", str(tmp_path / "data.trig")).returncode == 0
    select = "SELECT ?s ?o WHERE { ?s <http://example.org/p> ?o } ORDER BY ?o"  # the union of the graphs
    table = on_a_terminal(SPARQLRAG, "query", select, "--data-dir", str(data)).replace("\r\n", "\n")
    assert table.split("\n")[0].split() == ["?s", "?o"]
    assert [line.split() for line in table.split("\n")[2:5]] == [
        ["<http://example.org/s>", "default"],
        ["<http://example.org/s>", "named"],
        ["2", "rows"],
    ]
    asked = on_a_terminal(SPARQLRAG, "query", "ASK { ?s ?p ?o }", "--data-dir", str(data))
    assert asked.strip() == "yes"
    piped = cli(data, "query", select)  # not a terminal: the standard JSON
    assert [b["o"]["value"] for b in json.loads(piped.stdout)["results"]["bindings"]] == ["default", "named"]
    assert cli(data, "query", select, "--format", "table").stdout.split("\n")[0].split() == ["?s", "?o"]

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "one.md").write_text("CERN is a laboratory near Geneva.")
    paragraph = "The Nordic Energy Fund finances wind farms in Norway and solar parks in Sweden. "
    (corpus / "big.md").write_text("\n\n".join(paragraph * 30 for _ in range(12)))  # one document, many chunks
    env = {**os.environ, "TQDM_MININTERVAL": "0", "TQDM_MINITERS": "1"}  # every step of the bar drawn
    shown = on_a_terminal(SPARQLRAG, "ingest", str(corpus), "--data-dir", str(data), env=env)
    lines = [line.rsplit("\r", 1)[-1] for line in shown.replace("\r\n", "\n").split("\n")]
    reported = [line for line in lines if "chunks added" in line]
    assert len(reported) == 2 and all(line.startswith("ready      ") for line in reported), lines
    steps = [(int(n), int(total)) for n, total in re.findall(r"\| *(\d+)/(\d+) \[", shown)]
    assert any(0 < n < total for n, total in steps), steps  # the bar moves within the big document


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path: Path) -> None:
    """`sparqlrag ... | head`: the reader goes away; the command ends quietly, as one SIGPIPE ends."""
    data = tmp_path / "data"
    (tmp_path / "data.trig").write_bytes(TRIG)
    assert cli(data, "load", str(tmp_path / "data.trig")).returncode == 0
    child = subprocess.Popen(
        [SPARQLRAG, "query", "SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }", "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the command has written anything
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141 and stderr == "", stderr


def test_load_query_update_dump(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "in.trig").write_bytes(TRIG)
    loaded = cli(data, "load", str(tmp_path / "in.trig"))
    assert loaded.returncode == 0 and f"loaded {tmp_path / 'in.trig'} (TriG): +3 quads, 3 in the store" in loaded.stderr
    (tmp_path / "more.ttl").write_text('<http://example.org/t> <http://example.org/p> "turtle" .')
    more = cli(data, "load", str(tmp_path / "more.ttl"), str(tmp_path / "in.trig"), "--graph", "http://example.org/t")
    assert more.returncode == 0 and "(Turtle): +1 quads, 4 in the store" in more.stderr
    assert "(TriG): +0 quads, 4 in the store" in more.stderr  # what the store holds already is not counted again

    union = cli(data, "query", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--format", "csv")
    assert union.stdout.split() == ["n", "4"]
    default_only = cli(data, "query", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--format", "csv", "--no-union")
    assert default_only.stdout.split() == ["n", "1"]

    update = cli(
        data,
        "update",
        "-",
        stdin="INSERT DATA { GRAPH <http://example.org/t> { <http://example.org/t> <http://example.org/q> 1 } }",
    )
    assert update.returncode == 0, update.stderr
    (tmp_path / "q.rq").write_text("CONSTRUCT WHERE { <http://example.org/t> ?p ?o }")
    assert cli(data, "query", f"@{tmp_path / 'q.rq'}", "--format", "ntriples").stdout.count(" .\n") == 2

    dump = cli(data, "dump", "--format", "nquads")
    assert dump.returncode == 0 and dump.stdout.count("\n") == 5 and "<<(" in dump.stdout
    graph = cli(data, "dump", "--graph", "http://example.org/t", "--output", str(tmp_path / "t.ttl"))
    assert graph.returncode == 0 and "turtle" in (tmp_path / "t.ttl").read_text()
    assert json.loads((data / "sparqlrag.json").read_text())["base_iri"] == "http://localhost:7878/"
    # the default graph states a triple graph t states too: the union describes it once
    assert cli(data, "update", "INSERT DATA { <http://example.org/t> <http://example.org/q> 1 }").returncode == 0
    described = cli(data, "query", "DESCRIBE <http://example.org/t>", "--format", "ntriples").stdout.splitlines()
    assert (
        len(described) == len(set(described))
        and '<http://example.org/t> <http://example.org/p> "turtle" .' in described
    )


def test_large_load_uses_bulk_loader_with_progress(tmp_path: Path) -> None:
    big = tmp_path / "big.nt"
    with big.open("w") as out:
        for i in range(250_000):
            out.write(f'<http://example.org/s{i}> <http://example.org/p> "value number {i}" .\n')
    assert big.stat().st_size > 16 * 1024 * 1024
    result = cli(tmp_path / "data", "load", str(big))
    assert result.returncode == 0, result.stderr
    assert "bulk" in result.stderr and "big.nt" in result.stderr and "MB" in result.stderr  # tqdm's bar
    count = cli(tmp_path / "data", "query", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }", "--format", "tsv")
    assert count.stdout.split()[-1] == "250000"


@pytest.mark.parametrize(
    "args,message",
    [
        (["query", "SELECT * WHERE {"], "query syntax error"),
        (["update", "DROP"], "update syntax error"),
        (["load", "missing.ttl"], "no such file: missing.ttl"),
        (["load", "notes.txt"], "cannot tell the RDF format"),
        (["load", "bad.ttl"], "invalid Turtle data"),
        (["query", "SELECT * {}", "--format", "turtle"], "allows no SPARQL results format"),
        (["dump", "--format", "turtle"], "cannot hold named graphs"),
        (["dump", "--graph", "http://nowhere"], "does not exist"),
        (["query", "@nowhere.rq"], "no such file"),
    ],
)
def test_errors_are_one_line_without_traceback(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "bad.ttl").write_text("<http://a> <http://b> .")
    assert cli(tmp_path / "data", "update", "").returncode == 0  # (the data directory, empty)
    result = subprocess.run(
        [SPARQLRAG, *args, "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert message in result.stderr and result.stderr.startswith("sparqlrag: error:")
    assert "Traceback" not in result.stderr


def test_cli_refuses_a_directory_held_by_a_server(tmp_path: Path) -> None:
    assert cli(tmp_path, "update", "").returncode == 0 and cli(tmp_path, "query", "ASK {}").returncode == 0
    server_store = WorkerStore(tmp_path / "oxigraph")
    try:
        result = cli(tmp_path, "query", "ASK {}")
    finally:
        server_store.close()
    assert result.returncode == 2
    assert "in use by another process" in result.stderr and "sparqlrag serve" in result.stderr


def test_changed_base_iri_is_refused(tmp_path: Path) -> None:
    assert cli(tmp_path, "update", "").returncode == 0
    result = cli(tmp_path, "query", "ASK {}", "--base-iri", "http://kb.example/")
    assert result.returncode == 2 and "was created with base IRI http://localhost:7878/" in result.stderr


def test_a_data_directorys_base_iri_is_used_without_the_flag(tmp_path: Path) -> None:
    """Made once with --base-iri, the directory keeps it: later commands need no flag (issue 37, item 4)."""
    (tmp_path / "note.txt").write_text("Ada Lovelace wrote the first program.")
    made = cli(tmp_path / "data", "ingest", str(tmp_path / "note.txt"), "--base-iri", "http://kb.example/")
    assert made.returncode == 0, made.stderr
    entities = cli(tmp_path / "data", "query", "SELECT DISTINCT ?e WHERE { ?e ?p ?o }", "--format", "csv")
    assert entities.returncode == 0 and "http://kb.example/id/default/ada-lovelace" in entities.stdout
    listed = cli(tmp_path / "data", "documents")
    assert listed.returncode == 0 and "note.txt" in listed.stdout, listed.stderr
    other = cli(tmp_path / "data", "query", "ASK {}", "--base-iri", "http://other.example/")
    assert other.returncode == 2 and "was created with base IRI http://kb.example/" in other.stderr


def test_a_command_that_reads_refuses_a_folder_with_no_data_and_leaves_it_alone(tmp_path: Path) -> None:
    """`query` in the wrong folder used to make ./data there and answer `false` (issue 53)."""
    for args in (["query", "ASK { ?s ?p ?o }"], ["documents"], ["dump"], ["ask", "Who?"]):
        result = cli(tmp_path / "data", *args)
        assert result.returncode == 2 and "holds no sparqlrag data" in result.stderr and "--data-dir" in result.stderr
        assert not (tmp_path / "data").exists()
    assert cli(tmp_path / "data", "update", "").returncode == 0  # a command that puts data in makes it
    assert '"boolean":false' in cli(tmp_path / "data", "query", "ASK { ?s ?p ?o }").stdout


def test_a_damaged_settings_file_in_the_data_directory_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sparqlrag.json").write_bytes(b"\xff not json")
    result = cli(tmp_path / "data", "query", "ASK {}")
    assert result.returncode == 2 and "sparqlrag.json is not the JSON object" in result.stderr
    assert "Traceback" not in result.stderr
    assert (tmp_path / "data" / "sparqlrag.json").read_bytes() == b"\xff not json"  # left as it was


@pytest.mark.parametrize(
    "base_iri,port,warned",
    [
        ("http://localhost:7878/", 8000, True),  # made by `demo`, served on another port: dead links
        ("http://localhost:7878/", 7878, False),
        ("http://127.0.0.1:8000/", 8000, False),
        ("http://[::1]/", 80, False),
        ("https://kb.example.org/", 8000, False),  # a proxy's public name: the proxy maps it
    ],
)
def test_serving_a_data_directory_on_another_port_than_its_iris_is_warned(
    base_iri: str, port: int, warned: bool
) -> None:
    settings = Settings(base_iri=base_iri, port=port, host="127.0.0.1")
    warning = elsewhere(settings)
    assert (warning is not None) == warned
    assert warning is None or (f"--port {urlsplit(base_iri).port}" in warning and base_iri in warning)


def test_demo_ingests_the_corpus_and_answers_with_sources(tmp_path: Path) -> None:
    result = cli(tmp_path, "demo", "--no-serve", "--port", "18001")  # its links name the port it serves on
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert (
        "ready      berners-lee.md" in out and "Question: Where did the inventor of the World Wide Web invent it" in out
    )
    answer = out.split("?\n\n", 1)[1].split("\n")[0]
    assert "Tim Berners-Lee invented the World Wide Web at CERN in 1989. [1]" in answer
    assert "\nSources:\n  [1] Tim Berners-Lee: " in out and "\nTrace: http://localhost:18001/trace/default/" in out
    again = cli(tmp_path, "demo", "--no-serve")  # a second run finds the corpus ingested already, and its base IRI
    assert again.returncode == 0 and "unchanged  berners-lee.md" in again.stdout
    assert "Trace: http://localhost:18001/trace/default/" in again.stdout


def test_ask_in_each_mode_and_its_errors(tmp_path: Path) -> None:
    demo = cli(tmp_path, "demo", "--no-serve")
    assert demo.returncode == 0
    answer = demo.stdout.split("Question: ", 1)[1].split("\n\n")[
        1
    ]  # the answer follows the path: who, where, and where that is
    assert "invented the World Wide Web at CERN" in answer and "CERN is located near Geneva" in answer
    assert "\n       bridge, reached through: " in demo.stdout  # the graph's bridges, after the 3 passages
    question = "Where is CERN located?"
    for mode in ("evidence", "graph", "document", "hybrid", "pagerank"):
        result = cli(tmp_path, "ask", question, "--mode", mode, "--k", "2")
        assert result.returncode == 0, result.stderr
        assert (
            "Sources:\n  [1] CERN: " in result.stdout and "Trace: http://localhost:7878/trace/default/" in result.stdout
        )
    explained = cli(tmp_path, "ask", question, "--explain").stdout
    assert "Concepts: Where is CERN located?; CERN" in explained and "Facts (" in explained and "hop 1" in explained
    second = [line for line in explained.splitlines() if "  hop 2  " in line]
    assert second and all("  (via: " in line for line in second)  # a second hop names the fact it continues
    trace_id = explained.rsplit("/", 1)[1].strip()
    traced = cli(
        tmp_path,
        "query",
        f"SELECT ?m WHERE {{ ?t <https://w3id.org/sparqlrag/ns#mode> ?m FILTER(STRENDS(STR(?t), '{trace_id}')) }}",
        "--format",
        "csv",
    )
    assert traced.stdout.split() == ["m", "graph-rag/evidence"]  # the default mode
    for args, message in [
        (["ask", question, "--collection", "nope"], "no collection 'nope'"),
        (["ask", "why " * 600], "the limit is 2000"),
        (["ask", " "], "non-empty"),
        (["ask", question, "--bridges", "11"], "bridges must be an integer from 0 to 10"),
        (["ask", question, "--document", "nope.md"], "no document 'nope.md'"),
    ]:
        failed = cli(tmp_path, *args)
        assert failed.returncode == 2 and message in failed.stderr and "Traceback" not in failed.stderr
    scoped = cli(
        tmp_path,
        "ask",
        "Who invented the Web?",
        "--mode",
        "document",
        "--document",
        "rdf.md",
        "--document",
        "sparql.md",
    )
    cited = re.findall(r"^  \[\d\] ([^:]+):", scoped.stdout.split("Sources:", 1)[1], flags=re.MULTILINE)
    assert scoped.returncode == 0 and sorted(cited) == ["SPARQL", "The Resource Description Framework"]
    searched = cli(
        tmp_path,
        "query",
        "PREFIX sr: <https://w3id.org/sparqlrag/ns#> SELECT ?rank ?doc WHERE { SERVICE sr:documentRag { "
        '[] sr:question "Who invented the Web?" ; sr:k 2 ; sr:rank ?rank ; sr:document ?doc } } ORDER BY ?rank',
        "--format",
        "csv",
    )
    assert searched.returncode == 0 and searched.stdout.split()[:2] == [
        "rank,doc",
        "1,http://localhost:7878/doc/default/berners-lee.md",
    ]
    assert cli(tmp_path, "collections", "create", "empty").returncode == 0
    empty = cli(tmp_path, "ask", question, "--collection", "empty", "--mode", "graph")
    assert empty.returncode == 2 and "no entities to answer from" in empty.stderr
    nothing = cli(tmp_path, "ask", question, "--collection", "empty")  # the default mode answers from passages: none
    assert nothing.returncode == 0 and "Sources: none" in nothing.stdout


def test_ingest_documents_and_forget(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "curie.md").write_text("# Marie Curie\n\nMarie Curie was born in Warsaw. She moved to Paris in 1891.")
    (corpus / "sub" / "vistula.txt").write_text("The Vistula flows through Warsaw. Warsaw is the capital of Poland.")
    (corpus / "empty.txt").write_text("")
    (corpus / "ignored.csv").write_text("a,b")
    first = cli(tmp_path / "data", "ingest", str(corpus))
    assert first.returncode == 2 and "1 of 3 documents failed" in first.stderr
    lines = sorted(first.stdout.splitlines())
    assert lines[0].startswith("failed     empty.txt: the document is empty")
    assert lines[1].startswith("ready      curie.md: 1 chunks added") and lines[2].startswith(
        "ready      sub/vistula.txt"
    )
    listing = cli(tmp_path / "data", "documents").stdout.splitlines()
    assert any(line.startswith("ready") and "curie.md  (Marie Curie, text/markdown)" in line for line in listing)
    assert len(listing) == 2 and not any("empty.txt" in line for line in listing)  # bad input writes nothing
    again = cli(tmp_path / "data", "ingest", str(corpus / "curie.md"))
    assert again.returncode == 0 and again.stdout.strip() == "unchanged  curie.md"
    assert cli(tmp_path / "data", "forget", "sub/vistula.txt").stdout.strip() == "forgot sub/vistula.txt"
    missing = cli(tmp_path / "data", "forget", "sub/vistula.txt")
    assert missing.returncode == 2 and "no document 'sub/vistula.txt'" in missing.stderr
    nowhere = cli(tmp_path / "data", "ingest", str(tmp_path / "nowhere"))
    assert nowhere.returncode == 2 and "no such file or folder" in nowhere.stderr
    (tmp_path / "foaf.ttl").write_text("<http://a> <http://b> <http://c> .")  # RDF, not a document (issue 53)
    rdf = cli(tmp_path / "data", "ingest", str(tmp_path / "foaf.ttl"))
    assert rdf.returncode == 2 and "foaf.ttl is RDF" in rdf.stderr and "sparqlrag load" in rdf.stderr
    assert len(cli(tmp_path / "data", "documents").stdout.splitlines()) == 1  # nothing ingested
    bad_collection = cli(tmp_path / "data", "documents", "--collection", "Not Valid")
    assert bad_collection.returncode == 2 and "collection names are" in bad_collection.stderr


def test_ingest_jsonl_corpus_with_pre_extracted_triples(tmp_path: Path) -> None:
    shared = TEST_DATA / "musique"
    corpus, triples = tmp_path / "corpus.jsonl", tmp_path / "triples.jsonl"
    corpus.write_text("".join((shared / "corpus.jsonl").read_text().splitlines(keepends=True)[:3]))
    triples.write_text("".join((shared / "triples.jsonl").read_text().splitlines(keepends=True)[:3]))
    (tmp_path / "bad.jsonl").write_text('{"passage_id": "mq0", "triples": [["only two", "items"]]}\n')
    bad = cli(tmp_path / "data", "ingest", str(corpus), "--triples", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 2 and "line 1: each triple must be" in bad.stderr
    empty = cli(tmp_path / "data", "query", "SELECT (COUNT(*) AS ?n) { ?s ?p ?o }", "--format", "csv")
    assert empty.stdout.split() == ["n", "0"]  # the bad triples file stopped everything before writing
    result = cli(tmp_path / "data", "ingest", str(corpus), "--triples", str(triples))
    assert result.returncode == 0, result.stderr
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines()) == [
        "ready      mq0",
        "ready      mq1",
        "ready      mq2",
    ]
    facts = cli(
        tmp_path / "data",
        "query",
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> SELECT ?o WHERE "
        '{ ?s ?p ?o . ?p rdfs:label "published by" . '
        '?s rdfs:label "Journal of Mathematical Physics" }',
        "--format",
        "tsv",
    )
    assert facts.stdout.split("\n")[1] == "<http://localhost:7878/id/default/american-institute-of-physics>"


def test_model_configuration_errors_are_one_line(tmp_path: Path) -> None:
    import os

    (tmp_path / "a.txt").write_text("Oslo is in Norway.")
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | {"SPARQLRAG_LLM": "anthropic"}
    result = subprocess.run(
        [SPARQLRAG, "ingest", str(tmp_path / "a.txt"), "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2 and "ANTHROPIC_API_KEY" in result.stderr and "Traceback" not in result.stderr
    serve = subprocess.run(
        [SPARQLRAG, "serve", "--port", "0", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert serve.returncode == 2 and "ANTHROPIC_API_KEY" in serve.stderr and "Traceback" not in serve.stderr
    env["SPARQLRAG_LLM"] = "openai"
    result = subprocess.run(
        [SPARQLRAG, "documents", "--data-dir", str(tmp_path / "data")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 2 and "needs llm_base_url" in result.stderr


def test_collections_and_reingest(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "bohr.txt").write_text("Niels Bohr was born in Copenhagen.")
    unknown = cli(data, "ingest", str(tmp_path / "bohr.txt"), "--collection", "physics")
    assert unknown.returncode == 2 and "no collection 'physics'" in unknown.stderr and "Traceback" not in unknown.stderr
    assert cli(data, "collections", "create", "physics").stdout.strip() == "created physics"
    exists = cli(data, "collections", "create", "physics")
    assert exists.returncode == 2 and "exists already" in exists.stderr
    assert cli(data, "ingest", str(tmp_path / "bohr.txt"), "--collection", "physics").returncode == 0
    listing = {line.split()[0]: line.split()[1:] for line in cli(data, "collections").stdout.splitlines()}
    assert listing["physics"][:4] == ["1", "documents", "1", "chunks"] and listing["default"][0] == "0"
    again = cli(data, "reingest", "bohr.txt", "--collection", "physics")
    assert again.returncode == 0 and again.stdout.startswith("ready      bohr.txt: 1 chunks added, 1 removed, 0 kept")
    missing = cli(data, "reingest", "nope.txt", "--collection", "physics")
    assert missing.returncode == 2 and "no copy of document 'nope.txt'" in missing.stderr
    assert cli(data, "collections", "delete", "physics").stdout.strip() == "deleted physics"
    emptied = cli(data, "collections", "delete", "default")  # as the API says: it always exists
    assert emptied.returncode == 0 and "emptied, and stays" in emptied.stdout and "deleted" not in emptied.stdout
    gone = cli(data, "documents", "--collection", "physics")
    assert gone.returncode == 2 and "no collection 'physics'" in gone.stderr
    no_name = cli(data, "collections", "delete")
    assert no_name.returncode == 2 and "needs a collection name" in no_name.stderr


def test_a_loaded_graph_is_indexed_then_answers(tmp_path: Path) -> None:
    data, base = tmp_path / "data", "http://localhost:7878/"
    (tmp_path / "kg.ttl").write_text(f"""@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
<{base}id/default/kismet> rdfs:label "Kismet" ; <{base}rel/directed-by> <{base}id/default/william-dieterle> .
<{base}id/default/william-dieterle> rdfs:label "William Dieterle" .
<{base}rel/directed-by> rdfs:label "directed by" .
""")
    assert cli(data, "load", str(tmp_path / "kg.ttl"), "--graph", f"{base}graph/default").returncode == 0
    empty = cli(data, "ask", "Who directed Kismet?", "--mode", "graph")
    assert empty.returncode == 2 and "no entities to answer from" in empty.stderr
    indexed = cli(data, "index")
    assert (
        indexed.returncode == 0
        and indexed.stdout.strip() == "indexed 2 entity vectors and 1 fact vectors in collection 'default'"
    )
    assert cli(data, "index").stdout.strip() == "indexed 0 entity vectors and 0 fact vectors in collection 'default'"
    answer = cli(data, "ask", "Who directed Kismet?", "--explain")
    assert answer.returncode == 0 and "Kismet directed by William Dieterle." in answer.stdout
    assert "Sources: none" in answer.stdout  # loaded facts have no provenance


def test_entities_aliases_split_and_merge(tmp_path: Path) -> None:
    (tmp_path / "w3c.txt").write_text(
        "The World Wide Web Consortium (W3C) is a standards body. The W3C published SPARQL."
    )
    assert cli(tmp_path / "data", "ingest", str(tmp_path / "w3c.txt")).returncode == 0
    shown = cli(tmp_path / "data", "entities", "aliases", "W3C")
    assert shown.returncode == 0, shown.stderr
    aliases = json.loads(shown.stdout)
    assert aliases["label"] == "World Wide Web Consortium" and [m["rule"] for m in aliases["merges"]] == ["acronym"]
    split = cli(tmp_path / "data", "entities", "split", aliases["entity"], "W3C")
    assert split.returncode == 0 and json.loads(split.stdout)["kept_apart"] == ["W3C"]
    wrong = cli(tmp_path / "data", "entities", "split", aliases["entity"], "SPARQL")
    assert (
        wrong.returncode == 2
        and wrong.stderr.strip() == f"sparqlrag: error: 'SPARQL' is not an alias of {aliases['entity']}"
    )
    unknown = cli(tmp_path / "data", "entities", "merge", "Nobody", "W3C")
    assert unknown.returncode == 2 and "has no entity 'Nobody'" in unknown.stderr and "Traceback" not in unknown.stderr
