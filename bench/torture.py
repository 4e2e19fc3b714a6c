"""Crash loop: `sparqlrag serve` killed with SIGKILL at random moments under a mixed load, and
what must hold after every restart.

    .venv/bin/python bench/torture.py [--cycles 20] [--seconds 4] [--clients 8]
                                      [--load-seconds 120] [--load-clients 16] [--passages 2500] [--seed 1] [--markdown]

Every cycle starts the server on the same data directory, waits until recovery has finished
(no document queued or processing), checks the invariants, then runs `--clients` threads of
mixed requests for a random part of `--seconds`: document uploads (waited for, and
`Prefer: respond-async`), forgets, SPARQL updates (each acknowledged one recorded), SPARQL reads,
Graph RAG and Document RAG questions, the document list and linked-data pages, and a second
collection deleted and imported again from its knowledge core. Then it kills the server's whole
process group; every third cycle it kills the store worker alone first, and the load goes on
through the worker's restart.

The invariants, in SPARQL and against the index files (SQLite, read beside the running server):
every document `ready`; in each collection, every fact of the knowledge graph has a reifier;
every reifier reifies a fact of the graph (but a one-document merge's, which nobody asserts);
every extracted fact's reifier derives from a chunk that exists; the chunk vectors and keyword
rows are the store's chunks, one to one; every entity and fact vector names something the store
holds; the imported collection is absent, empty or the whole core; every acknowledged SPARQL
update is there, and none is half there.

Then sustained load: a fresh server takes `--passages` passages (MuSiQue-100 and 2Wiki-101) and
the second collection, then `--load-clients` threads of the same mix for `--load-seconds` with no
kill, RSS sampled (the highest of each quarter), and the invariants after.

Then API fuzzing: schemathesis over the server's `/openapi.json` on that same data, every check
it has (bench/schemathesis.toml says where one is relaxed, and why), `--fuzz-examples` cases an
operation, stateful sequences included, once with a write token and once with a read token.

Prints, for each part: invariant violations, acknowledged writes lost, 5xx responses, requests
served, p50 / p99 per route and the server's peak RSS (and cycles survived / run; for fuzzing,
the cases run, failures by check and whether the server still answers); the last line is one
JSON object.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import RssSampler, server, server_log  # noqa: E402
from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

DEFAULT_CORPORA = [SHARED / "musique100" / "corpus.jsonl", SHARED / "2wiki101" / "corpus.jsonl"]

BASE = "http://torture.example/"
COPY = "copy"  # the collection deleted and imported again from its core
WRITES = "<urn:torture:writes>"
PREFIXES = (
    "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> PREFIX prov: <http://www.w3.org/ns/prov#> "
    "PREFIX owl: <http://www.w3.org/2002/07/owl#> PREFIX sr: <https://w3id.org/sparqlrag/ns#> "
    "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
)
QUESTIONS = ["Who founded the company?", "Where was the composer born?", "Which river flows through the city?"]


@dataclass
class Load:
    """What the clients did: requests per route (status, ms), and the SPARQL writes acknowledged."""

    texts: list[str]
    rng: random.Random
    lock: threading.Lock = field(default_factory=threading.Lock)
    timings: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)
    acknowledged: set[int] = field(default_factory=set)
    next_id: int = 0
    core: bytes = b""  # COPY's knowledge core, and its counts
    core_counts: tuple[int, int, int] = (0, 0, 0)

    def ticket(self) -> int:
        with self.lock:
            self.next_id += 1
            return self.next_id

    def call(self, route: str, send: Callable[[], httpx.Response]) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = send()
        except httpx.TransportError:  # the server was killed: not acknowledged
            return None
        with self.lock:
            self.timings[route].append(1000 * (time.perf_counter() - started))
            self.statuses[route, response.status_code] += 1
        return response


def upload(client: httpx.Client, load: Load) -> None:
    number = load.rng.randrange(60)  # a small id space: documents are replaced and forgotten again
    body = {"id": f"t{number}", "text": "\n\n".join(load.rng.sample(load.texts, 3))}
    if load.rng.random() < 0.5:
        load.call("POST documents (async)", lambda: client.post("/api/v1/documents?async=true", json=body))
    else:
        load.call("POST documents", lambda: client.post("/api/v1/documents", json=body))


def forget(client: httpx.Client, load: Load) -> None:
    number = load.rng.randrange(60)
    load.call("DELETE documents", lambda: client.delete(f"/api/v1/documents/t{number}"))


def update(client: httpx.Client, load: Load) -> None:
    number = load.ticket()
    text = f"INSERT DATA {{ GRAPH {WRITES} {{ <urn:t:{number}> <urn:t:a> {number} ; <urn:t:b> {number} }} }}"
    headers = {"Content-Type": "application/sparql-update"}
    response = load.call("POST sparql (update)", lambda: client.post("/sparql", content=text, headers=headers))
    if response is not None and response.status_code == 204:
        with load.lock:
            load.acknowledged.add(number)


def reimport(client: httpx.Client, load: Load) -> None:
    load.call("DELETE collections", lambda: client.delete(f"/api/v1/collections/{COPY}"))
    headers = {"Content-Type": "application/zip"}
    load.call("POST core", lambda: client.post(f"/api/v1/collections/{COPY}/core", content=load.core, headers=headers))


def read(client: httpx.Client, load: Load) -> None:
    query = load.rng.choice(
        [
            "SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
            "ASK { ?s ?p ?o }",
            "CONSTRUCT { ?s ?p ?o } WHERE { GRAPH ?g { ?s ?p ?o } } LIMIT 50",
            "SELECT ?g (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } } GROUP BY ?g",
        ]
    )
    load.call("GET sparql", lambda: client.get("/sparql", params={"query": query}))


def ask(client: httpx.Client, load: Load) -> None:
    route = load.rng.choice(["/api/v1/graph-rag", "/api/v1/document-rag"])
    load.call(f"POST {route}", lambda: client.post(route, json={"question": load.rng.choice(QUESTIONS)}))


def browse(client: httpx.Client, load: Load) -> None:
    listed = load.call("GET documents", lambda: client.get("/api/v1/documents"))
    if listed is not None and listed.status_code == 200 and (documents := listed.json().get("documents")):
        path = "/page/" + documents[load.rng.randrange(len(documents))]["iri"].removeprefix(BASE)
        load.call("GET page", lambda: client.get(path))


OPERATIONS: list[tuple[Callable[[httpx.Client, Load], None], int]] = [
    (upload, 3),
    (forget, 1),
    (update, 4),
    (read, 3),
    (ask, 2),
    (browse, 1),
    (reimport, 1),
]


def run_load(client: httpx.Client, load: Load, stop: threading.Event) -> None:
    operations, weights = zip(*OPERATIONS)
    with httpx.Client(base_url=client.base_url, timeout=60) as own:
        while not stop.is_set():
            load.rng.choices(operations, weights)[0](own, load)


def wait_for_recovery(client: httpx.Client, timeout: float = 300) -> list[dict[str, Any]]:
    """The documents, once none is queued or processing (a restart resumes them)."""
    deadline = time.monotonic() + timeout
    while True:
        documents = client.get("/api/v1/documents").json()["documents"]
        unfinished = [f"{d['id']} {d['status']}" for d in documents if d["status"] in ("queued", "processing")]
        if not unfinished:
            return documents
        if time.monotonic() > deadline:
            print(f"still unfinished after {timeout:.0f} s: {', '.join(unfinished)}", file=sys.stderr)
            return documents
        time.sleep(0.5)


def select(client: httpx.Client, query: str) -> list[dict[str, str]]:
    response = client.get("/sparql", params={"query": PREFIXES + query}, headers={"Accept": "application/json"})
    response.raise_for_status()
    return [{k: v["value"] for k, v in row.items()} for row in response.json()["results"]["bindings"]]


def index_rows(data: Path, query: str) -> set[str]:
    """Rows of an index file, read beside the server (SQLite in WAL mode lets a reader in)."""
    with sqlite3.connect(f"file:{data}?mode=ro", uri=True) as db:
        try:
            return {row[0] for row in db.execute(query)}
        except sqlite3.OperationalError:  # no such table: nothing indexed yet
            return set()


def violations(client: httpx.Client, data: Path, load: Load) -> dict[str, int]:
    """How many things break each invariant (all zero when the data directory is sound)."""
    documents = wait_for_recovery(client)
    found = Counter({"documents not ready": sum(d["status"] != "ready" for d in documents)})
    for name in ("default", COPY):
        found.update(collection_violations(client, data, name))
    copy = client.get(f"/api/v1/collections/{COPY}")
    counts = (0, 0, 0) if copy.status_code == 404 else tuple(copy.json()[k] for k in ("documents", "chunks", "facts"))
    found["collection imported in part"] = int(counts not in ((0, 0, 0), load.core_counts))
    written = select(client, f"SELECT ?w ?p WHERE {{ GRAPH {WRITES} {{ ?w ?p ?o }} }}")
    halves = Counter(row["w"] for row in written)
    found["half-applied updates"] = sum(count != 2 for count in halves.values())
    with load.lock:
        found["acknowledged updates lost"] = len({f"urn:t:{n}" for n in load.acknowledged} - set(halves))
    return dict(found)


def collection_violations(client: httpx.Client, data: Path, name: str) -> dict[str, int]:
    """The invariants of one collection's graphs and index rows."""
    kg, src = f"<{BASE}graph/{name}>", f"<{BASE}graph/{name}/source>"
    found = {}
    found["facts without a reifier"] = len(
        select(
            client,
            f"SELECT ?s ?p ?o WHERE {{ GRAPH {kg} {{ ?s ?p ?o }} FILTER NOT EXISTS {{ GRAPH {src} {{ "
            "?r rdf:reifies <<( ?s ?p ?o )>> } } }",
        )
    )
    found["reifiers of no fact"] = len(
        select(
            client,
            f"SELECT ?r WHERE {{ GRAPH {src} {{ ?r rdf:reifies <<( ?s ?p ?o )>> }} "
            f"FILTER NOT EXISTS {{ GRAPH {kg} {{ ?s ?p ?o }} }} "
            # a merge that holds in one document only reifies a triple nobody asserts (provenance.py)
            f"FILTER(?p != owl:sameAs || EXISTS {{ GRAPH {src} {{ ?r sr:key ?k }} }}) }}",
        )
    )
    found["extracted facts without a chunk"] = len(
        select(
            client,
            f"SELECT ?r WHERE {{ GRAPH {src} {{ ?r rdf:reifies <<( ?s ?p ?o )>> }} FILTER(?p != owl:sameAs) "
            f"FILTER NOT EXISTS {{ GRAPH {src} {{ ?r prov:wasDerivedFrom ?c . ?c a sr:Chunk }} }} }}",
        )
    )
    chunks = {row["c"] for row in select(client, f"SELECT ?c WHERE {{ GRAPH {src} {{ ?c a sr:Chunk }} }}")}
    vectors = index_rows(data / "vectors.sqlite", f"SELECT iri FROM points WHERE name = '{name}__chunks'")
    keywords = index_rows(data / "keywords.sqlite", f'SELECT iri FROM "chunks_{name}"')
    found["chunks without a vector"] = len(chunks - vectors)
    found["chunk vectors of no chunk"] = len(vectors - chunks)
    found["chunks without keyword rows"] = len(chunks - keywords)
    found["keyword rows of no chunk"] = len(keywords - chunks)
    named = {
        row["e"]
        for row in select(
            client,
            f"SELECT DISTINCT ?e WHERE {{ GRAPH {kg} {{ {{ ?e rdfs:label ?l }} UNION {{ ?e owl:sameAs ?x }} }} }}",
        )
    }
    entities = index_rows(data / "vectors.sqlite", f"SELECT iri FROM points WHERE name = '{name}__entities'")
    found["entity vectors of nothing named"] = len(entities - named)
    reifiers = {row["r"] for row in select(client, f"SELECT ?r WHERE {{ GRAPH {src} {{ ?r rdf:reifies ?t }} }}")}
    facts = index_rows(data / "vectors.sqlite", f"SELECT iri FROM points WHERE name = '{name}__facts'")
    found["fact vectors of no fact"] = len(facts - reifiers)
    return found


def seed_copy(data: Path, load: Load) -> None:
    """COPY created with a few passages, and its knowledge core kept for `reimport`."""
    with server(data, BASE) as (client, _):
        client.post("/api/v1/collections", json={"name": COPY}).raise_for_status()
        files = [("file", (f"c{i}", text.encode(), "text/plain")) for i, text in enumerate(load.texts[:8])]
        client.post(f"/api/v1/documents?collection={COPY}", files=files).raise_for_status()
        core = client.get(f"/api/v1/collections/{COPY}/core")
        core.raise_for_status()
        load.core = core.content
        info = client.get(f"/api/v1/collections/{COPY}").json()
        load.core_counts = (info["documents"], info["chunks"], info["facts"])


def worker_pids(server_pid: int) -> list[int]:
    """The store worker: the server's child processes."""
    children = Path(f"/proc/{server_pid}/task/{server_pid}/children")
    return [int(pid) for pid in children.read_text().split()] if children.exists() else []


def cycle(data: Path, load: Load, seconds: float, clients: int, kill_worker: bool) -> dict[str, Any]:
    with server(data, BASE) as (client, process):
        sampler = RssSampler(process.pid)
        found = violations(client, data, load)
        stop = threading.Event()
        threads = [threading.Thread(target=run_load, args=(client, load, stop)) for _ in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(load.rng.uniform(0.3, 1) * seconds)
        if kill_worker:
            for pid in worker_pids(process.pid):
                os.kill(pid, signal.SIGKILL)
            time.sleep(load.rng.uniform(0.3, 1) * seconds)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        stop.set()
        for thread in threads:
            thread.join()
        sampler.stop()
    if any(found.values()):  # what the server said, for whoever reads the failure
        print(*server_log(data).read_text(errors="replace").splitlines()[-40:], sep="\n", file=sys.stderr)
    return {"violations": found, "peak_mb": sampler.peak}


def final_check(data: Path, load: Load) -> dict[str, Any]:
    """After the last kill: the invariants once more, and a knowledge core that still imports."""
    with server(data, BASE) as (client, _):
        found = violations(client, data, load)
        core = client.get("/api/v1/collections/default/core")
        with server(data.with_name("fresh"), BASE) as (fresh, _):
            imported = fresh.post(
                "/api/v1/collections/default/core",
                content=core.content,
                headers={"Content-Type": core.headers["content-type"]},
            )
    return {"violations": found, "core exported": core.status_code, "core imported": imported.status_code}


def sustained(data: Path, load: Load, passages: list[dict[str, Any]], seconds: float, clients: int) -> dict[str, Any]:
    """`passages` uploaded, then `clients` threads of mixed load for `seconds` with no kill: RSS
    sampled throughout (the highest of each quarter), and the invariants after."""
    with server(data, BASE) as (client, process):
        for start in range(0, len(passages), 128):
            files = [
                ("file", (p["id"], f"{p['title']}. {p['text']}".encode(), "text/plain"))
                for p in passages[start : start + 128]
            ]
            client.post("/api/v1/documents", files=files).raise_for_status()
        sampler = RssSampler(process.pid, every=0.5)
        quarters = []
        stop = threading.Event()
        threads = [threading.Thread(target=run_load, args=(client, load, stop)) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for _ in range(4):
            sampler.peak = 0.0
            time.sleep(seconds / 4)
            quarters.append(sampler.peak)
        stop.set()
        for thread in threads:
            thread.join()
        sampler.stop()
        found = violations(client, data, load)
    return {"violations": found, "rss_mb_by_quarter": quarters, "peak_mb": max(quarters)}


SCHEMATHESIS = shutil.which("schemathesis") or str(Path(sys.executable).with_name("schemathesis"))
TOKENS = {"write": "torture-write-token", "read": "torture-read-token"}


def fuzz(data: Path, examples: int, seed: int) -> dict[str, Any]:
    """schemathesis, with each token, against a server on `data`: cases run, failures by code."""
    env = {"SPARQLRAG_WRITE_TOKENS": TOKENS["write"], "SPARQLRAG_READ_TOKENS": TOKENS["read"]}
    figures: dict[str, Any] = {}
    with server(data, BASE, env | {"SPARQLRAG_ANSWER_RATE": "0"}) as (client, _):
        for scope, token in TOKENS.items():
            run = subprocess.run(
                [
                    SCHEMATHESIS,
                    "--config-file",
                    str(ROOT / "bench" / "schemathesis.toml"),
                    "run",
                    f"{client.base_url}/openapi.json",
                    "--max-examples",
                    str(examples),
                    "--seed",
                    str(seed),
                    "--generation-database",
                    "none",
                    "--header",
                    f"Authorization: Bearer {token}",
                    "--no-color",
                ],
                capture_output=True,
                text=True,
                cwd=data.parent,
            )
            figures[scope] = fuzzed(run) | {"alive": client.get("/healthz").status_code == 200}
            if run.returncode:
                print(run.stdout[-6000:], file=sys.stderr)
    return figures


def fuzzed(run: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """What one schemathesis run found: cases, failures by check code, its exit status. A run
    that failed in a way no check names (a network error, a timeout, a crash of its own) counts
    as failure "unnamed", with the end of its output, so that a failed run never reads as clean."""
    failures = {code: int(n) for code, n in re.findall(r"❌ (ST\d+) [^:\n]+: (\d+)", run.stdout)}
    if run.returncode and not failures:
        failures["unnamed"] = 1
    generated = re.search(r"(\d+) generated", run.stdout)
    found: dict[str, Any] = {
        "cases": int(generated.group(1)) if generated else 0,
        "failures": failures,
        "5xx": failures.get("ST101", 0),
        "exit": run.returncode,
    }
    if run.returncode:
        found["output"] = (run.stdout + run.stderr)[-3000:]
    return found


def summary(load: Load, totals: Counter[str], peak: float) -> dict[str, Any]:
    """The figures of one part: violations, writes lost, 5xx, requests, latency per route."""
    errors = {f"{route} {status}": n for (route, status), n in load.statuses.items() if status >= 500}
    return {
        "violations": dict(totals),
        "invariant violations": sum(v for k, v in totals.items() if k != "acknowledged updates lost"),
        "acknowledged writes lost": totals["acknowledged updates lost"],
        "acknowledged writes": len(load.acknowledged),
        "5xx": sum(errors.values()),
        "5xx by route": errors,
        "requests": sum(load.statuses.values()),
        "peak_rss_mb": peak,
        "routes": {
            route: {
                "requests": len(times),
                "p50_ms": statistics.median(times),
                "p99_ms": sorted(times)[min(len(times) - 1, int(0.99 * len(times)))],
            }
            for route, times in sorted(load.timings.items())
        },
    }


def section(title: str, figures: dict[str, Any]) -> list[str]:
    rows = [
        [route, str(r["requests"]), f"{r['p50_ms']:.0f}", f"{r['p99_ms']:.0f}"]
        for route, r in figures["routes"].items()
    ]
    return [
        f"\n### {title}: {figures['invariant violations']} invariant violations, {figures['acknowledged writes lost']} "
        f"of {figures['acknowledged writes']} acknowledged writes lost, {figures['5xx']} 5xx of {figures['requests']} "
        f"requests, peak RSS {figures['peak_rss_mb']:.0f} MB\n",
        *markdown_table(["route", "requests", "p50 ms", "p99 ms"], rows),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=4, help="longest load before a kill, in seconds")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--load-seconds", type=float, default=120, help="sustained load, in seconds (0: none)")
    parser.add_argument("--load-clients", type=int, default=16)
    parser.add_argument("--passages", type=int, default=2500, help="passages in the collection under sustained load")
    parser.add_argument("--fuzz-examples", type=int, default=20, help="schemathesis cases an operation (0: no fuzzing)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--markdown", action="store_true", help="append the tables to bench/RESULTS.md")
    parser.add_argument(
        "--corpus",
        type=Path,
        action="append",
        help="a passage file ({title, text} a line) to draw documents from; repeatable "
        "(default: the shared MuSiQue-100 and 2Wiki-101 passages)",
    )
    args = parser.parse_args()
    corpus = [p for path in args.corpus or DEFAULT_CORPORA for p in read_jsonl(path)]
    texts = [f"{p['title']}. {p['text']}" for p in corpus]
    report: dict[str, Any] = {}
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="torture-") as work:
        if args.cycles:
            load, totals, peak = Load(texts, random.Random(args.seed)), Counter[str](), 0.0
            data = Path(work) / "data"
            seed_copy(data, load)
            for number in range(args.cycles):
                result = cycle(data, load, args.seconds, args.clients, kill_worker=number % 3 == 2)
                totals.update(result["violations"])
                peak = max(peak, result["peak_mb"])
                broken = {k: v for k, v in result["violations"].items() if v}
                print(f"cycle {number + 1}: {broken or 'every invariant holds'}", file=sys.stderr, flush=True)
            final = final_check(data, load)
            totals.update(final["violations"])
            survived = args.cycles if final["core imported"] == 201 else args.cycles - 1
            report["crash loop"] = summary(load, totals, peak) | {
                "cycles": args.cycles,
                "cycles survived": survived,
                "core": {k: v for k, v in final.items() if k != "violations"},
            }
            lines += section(f"Crash loop, {survived}/{args.cycles} cycles survived", report["crash loop"])
        if args.load_seconds:
            load = Load(texts, random.Random(args.seed))
            passages = corpus[: args.passages]
            seed_copy(Path(work) / "load", load)
            result = sustained(Path(work) / "load", load, passages, args.load_seconds, args.load_clients)
            report["sustained load"] = summary(load, Counter(result["violations"]), result["peak_mb"]) | {
                "seconds": args.load_seconds,
                "clients": args.load_clients,
                "passages": len(passages),
                "rss_mb_by_quarter": result["rss_mb_by_quarter"],
            }
            quarters = " / ".join(f"{mb:.0f}" for mb in result["rss_mb_by_quarter"])
            lines += section(
                f"Sustained load, {args.load_clients} clients for {args.load_seconds:.0f} s on {len(passages)} "
                f"passages (RSS by quarter {quarters} MB)",
                report["sustained load"],
            )
        if args.fuzz_examples:
            data = Path(work) / ("load" if args.load_seconds else "fuzz")
            report["fuzzing"] = fuzz(data, args.fuzz_examples, args.seed)
            rows = [
                [
                    scope,
                    str(f["cases"]),
                    str(f["5xx"]),
                    ", ".join(f"{c}: {n}" for c, n in f["failures"].items()) or "none",
                ]
                + ["yes" if f["alive"] else "NO"]
                for scope, f in report["fuzzing"].items()
            ]
            lines += [
                f"\n### API fuzzing: schemathesis, every check, {args.fuzz_examples} cases an operation\n",
                *markdown_table(["token", "cases", "5xx", "failures", "alive after"], rows),
            ]
    publish("torture.py", "\n".join(lines), report, args.markdown)


if __name__ == "__main__":
    main()
