"""sparqlrag's SPARQL HTTP server against `oxigraph serve`, on the same data and query mix.

Generates a BSBM-like dataset (products, producers, features, vendors, offers, reviewers,
reviews; ~1M triples by default), loads it into each server over HTTP, then runs a query
mix (point lookup, 2-hop join, 1k-row SELECT, CONSTRUCT, aggregate) with 1 and 8 concurrent
keep-alive clients. Prints throughput and p50/p99 latency per server and the ratio
ours/oxigraph; `--markdown` appends the table to bench/RESULTS.md.

    .venv/bin/python bench/sparql_http.py [--triples 1000000] [--seconds 5] [--markdown]

Everything runs on this machine: servers on 127.0.0.1, clients in this process (threads
with http.client, so the client costs the same for both servers).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from report import publish

BSBM = "http://bsbm.example/vocabulary/"
INST = "http://bsbm.example/instances/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
PREFIXES = f"PREFIX bsbm: <{BSBM}> PREFIX inst: <{INST}> PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
BIN = Path(sys.executable).parent


# -- data ------------------------------------------------------------------------------------


@dataclass
class Shape:
    products: int
    vendors: int
    producers: int
    reviewers: int
    features: int


def generate(path: Path, triples: int, seed: int = 7) -> Shape:
    """Write ~`triples` N-Triples in the BSBM shape (48 triples per product, plus the rest)."""
    rng = random.Random(seed)
    products = max(triples // 48, 10)
    shape = Shape(
        products, max(products // 100, 2), max(products // 50, 2), max(products // 10, 2), max(products // 20, 5)
    )

    def iri(kind: str, n: int) -> str:
        return f"<{INST}{kind}{n}>"

    def lit(value: object, datatype: str | None = None) -> str:
        text = json.dumps(str(value))
        return f"{text}^^<http://www.w3.org/2001/XMLSchema#{datatype}>" if datatype else text

    with path.open("w") as out:
        w = out.write
        for n in range(shape.features):
            w(
                f"{iri('Feature', n)} <{RDF_TYPE}> <{BSBM}ProductFeature> .\n{iri('Feature', n)} <{LABEL}> "
                f"{lit(f'feature {n}')} .\n"
            )
        for n in range(shape.producers):
            w(
                f"{iri('Producer', n)} <{RDF_TYPE}> <{BSBM}Producer> .\n{iri('Producer', n)} <{LABEL}> "
                f"{lit(f'producer {n}')} .\n"
            )
        for n in range(shape.vendors):
            w(
                f"{iri('Vendor', n)} <{RDF_TYPE}> <{BSBM}Vendor> .\n{iri('Vendor', n)} <{LABEL}> {lit(f'vendor {n}')} "
                f".\n"
            )
            w(
                f"{iri('Vendor', n)} <{BSBM}country> "
                f"<http://countries.example/{rng.choice('DE FR US GB JP CN'.split())}> .\n"
            )
        for n in range(shape.reviewers):
            w(
                f"{iri('Reviewer', n)} <{RDF_TYPE}> <{BSBM}Person> .\n{iri('Reviewer', n)} <{BSBM}name> "
                f"{lit(f'reviewer {n}')} .\n"
            )
        offer = review = 0
        for n in range(products):
            p = iri("Product", n)
            w(f"{p} <{RDF_TYPE}> <{BSBM}Product> .\n{p} <{LABEL}> {lit(f'product {n} label')} .\n")
            w(f"{p} <http://www.w3.org/2000/01/rdf-schema#comment> {lit('a fairly long product description ' * 3)} .\n")
            w(f"{p} <{BSBM}producer> {iri('Producer', rng.randrange(shape.producers))} .\n")
            for f in rng.sample(range(shape.features), 5):
                w(f"{p} <{BSBM}productFeature> {iri('Feature', f)} .\n")
            for k in range(1, 4):
                w(f"{p} <{BSBM}productPropertyNumeric{k}> {lit(rng.randrange(2000), 'integer')} .\n")
            w(f"{p} <{BSBM}productPropertyTextual1> {lit(f'text {rng.randrange(10**6)}')} .\n")
            for _ in range(4):
                o = iri("Offer", offer)
                offer += 1
                w(f"{o} <{RDF_TYPE}> <{BSBM}Offer> .\n{o} <{BSBM}product> {p} .\n")
                w(f"{o} <{BSBM}vendor> {iri('Vendor', rng.randrange(shape.vendors))} .\n")
                w(f"{o} <{BSBM}price> {lit(round(rng.uniform(5, 10000), 2), 'decimal')} .\n")
                w(f"{o} <{BSBM}deliveryDays> {lit(rng.randrange(1, 21), 'integer')} .\n")
            for _ in range(3):
                r = iri("Review", review)
                review += 1
                w(f"{r} <{RDF_TYPE}> <{BSBM}Review> .\n{r} <{BSBM}reviewFor> {p} .\n")
                w(f"{r} <{BSBM}reviewer> {iri('Reviewer', rng.randrange(shape.reviewers))} .\n")
                w(f"{r} <{BSBM}rating1> {lit(rng.randrange(1, 11), 'integer')} .\n")
                w(f"{r} <{BSBM}title> {lit(f'review {review} title')} .\n")
    return shape


# -- servers ---------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    port: int
    query_path: str
    load_path: str
    process: subprocess.Popen | None = None

    def wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                status, _ = request(self.port, "GET", self.query_path + "?" + urlencode({"query": "ASK {}"}))
                if status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)


def start_ours(data_dir: Path, port: int) -> Server:
    process = subprocess.Popen(
        [str(BIN / "sparqlrag"), "serve", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Server("sparqlrag", port, "/sparql", "/store", process)
    server.wait_ready()
    return server


def start_oxigraph(data_dir: Path, port: int) -> Server:
    binary = shutil.which("oxigraph") or str(BIN / "oxigraph")
    process = subprocess.Popen(
        [binary, "serve", "--location", str(data_dir), "--bind", f"127.0.0.1:{port}", "--union-default-graph"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = Server("oxigraph", port, "/query", "/store?no_transaction", process)
    server.wait_ready()
    return server


def request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> tuple[int, bytes]:
    conn = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    if connection is None:
        conn.close()
    return response.status, data


def bulk_load(server: Server, data: Path) -> float:
    started = time.monotonic()
    with data.open("rb") as body:
        status, text = request(
            server.port,
            "POST",
            server.load_path,
            body,  # type: ignore[arg-type]
            {"Content-Type": "application/n-quads", "Content-Length": str(data.stat().st_size)},
        )
    if status not in (200, 201, 204):
        raise RuntimeError(f"{server.name} load failed: {status} {text[:300]!r}")
    return time.monotonic() - started


# -- query mix -------------------------------------------------------------------------------


def query_mix(shape: Shape) -> dict[str, Callable[[random.Random], str]]:
    def product(rng: random.Random) -> str:
        return f"<{INST}Product{rng.randrange(shape.products)}>"

    return {
        "point lookup": lambda rng: f"SELECT ?p ?o WHERE {{ {product(rng)} ?p ?o }}",
        "2-hop join": lambda rng: (
            PREFIXES
            + (
                f"SELECT ?offer ?price ?vendor ?country WHERE {{ ?offer bsbm:product {product(rng)} ; bsbm:price "
                f"?price ; "
                "bsbm:vendor ?v . ?v rdfs:label ?vendor ; bsbm:country ?country }"
            )
        ),
        "1k-row SELECT": lambda rng: (
            PREFIXES
            + (
                "SELECT ?product ?label ?producer WHERE "
                "{ ?product a bsbm:Product ; rdfs:label ?label ; bsbm:producer ?producer } "
                f"LIMIT 1000 OFFSET {rng.randrange(max(shape.products - 1000, 1))}"
            )
        ),
        "CONSTRUCT": lambda rng: (
            PREFIXES
            + (
                f"CONSTRUCT {{ ?review ?p ?o . ?offer ?q ?x }} WHERE {{ {{ ?review bsbm:reviewFor {product(rng)} ; ?p "
                f"?o }} "
                f"UNION {{ ?offer bsbm:product {product(rng)} ; ?q ?x }} }}"
            )
        ),
        "aggregate": lambda rng: (
            PREFIXES
            + (
                "SELECT ?vendor (COUNT(?offer) AS ?offers) (AVG(?price) AS ?avg) WHERE { ?offer bsbm:vendor ?vendor ; "
                f"bsbm:price ?price ; bsbm:deliveryDays {rng.randrange(1, 21)} }} GROUP BY ?vendor ORDER BY "
                f"DESC(?offers) LIMIT 10"
            )
        ),
    }


ACCEPT = {"CONSTRUCT": "application/n-triples"}


@dataclass
class Measure:
    requests: int
    seconds: float
    latencies: list[float]

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(int(q * len(ordered)), len(ordered) - 1)] * 1000


def run_mix(server: Server, name: str, make: Callable[[random.Random], str], clients: int, seconds: float) -> Measure:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client(index: int) -> None:
        rng = random.Random(index * 7919 + len(name))
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        mine = []
        headers = {
            "Content-Type": "application/sparql-query",
            "Accept": ACCEPT.get(name, "application/sparql-results+json"),
        }
        while time.monotonic() < deadline:
            started = time.perf_counter()
            status, body = request(server.port, "POST", server.query_path, make(rng).encode(), headers, conn)
            mine.append(time.perf_counter() - started)
            if status != 200:
                errors.append(f"{status} {body[:200]!r}")
                break
        conn.close()
        with lock:
            latencies.extend(mine)

    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"{server.name} {name}: {errors[0]}")
    return Measure(len(latencies), time.monotonic() - started, latencies)


def beside_heavy(server: Server, mix: dict[str, Callable[[random.Random], str]], heavy: int, seconds: float) -> Measure:
    """Point lookups from one client while `heavy` clients keep heavy queries running (aggregate and
    1k-row SELECT, alternately): how long a small read waits behind big ones. The heavy clients
    come from another address (127.0.0.2), as another machine's would: ours limits how many
    queries one client may run at once."""
    stop = time.monotonic() + seconds + 1.0
    names = ["aggregate", "1k-row SELECT"]

    def load(index: int) -> None:
        rng, name = random.Random(index), names[index % 2]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600, source_address=("127.0.0.2", 0))
        headers = {"Content-Type": "application/sparql-query", "Accept": "application/sparql-results+json"}
        while time.monotonic() < stop:
            status, body = request(server.port, "POST", server.query_path, mix[name](rng).encode(), headers, conn)
            if status != 200:
                raise RuntimeError(f"{server.name} {name}: {status} {body[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=load, args=(i,)) for i in range(heavy)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # the heavy queries are running
    measure = run_mix(server, "point lookup", mix["point lookup"], 1, seconds)
    for thread in threads:
        thread.join()
    return measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per query type and concurrency")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--only", nargs="+", help="run only these workloads (names as printed)")
    parser.add_argument("--heavy", type=int, default=8, help="heavy clients beside the point lookups (0: skip)")
    parser.add_argument("--markdown", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="sparql-bench-"))
    data = work / "data.nt"
    started = time.monotonic()
    shape = generate(data, args.triples)
    lines = sum(1 for _ in data.open("rb"))
    print(f"generated {lines:,} triples ({data.stat().st_size / 1e6:.0f} MB) in {time.monotonic() - started:.1f} s")

    full_mix = query_mix(shape)
    mix = {name: make for name, make in full_mix.items() if not args.only or name in args.only}
    beside: dict[str, Measure] = {}
    results: dict[str, dict[tuple[str, int], Measure]] = {}
    loads: dict[str, float] = {}
    servers: list[Server] = []
    try:
        # Load modes: ours checked (default, atomic on bad data) and unchecked (?no_transaction),
        # against Oxigraph's fastest (?no_transaction). The query stores are the ones loaded last.
        scratch = start_ours(work / "scratch", 7880)
        scratch.load_path = "/store?no_transaction"
        loads["sparqlrag no_transaction"] = bulk_load(scratch, data)
        scratch.stop()
        shutil.rmtree(work / "scratch")
        servers = [start_ours(work / "ours", 7881), start_oxigraph(work / "oxigraph", 7882)]
        for server in servers:
            loads[server.name] = bulk_load(server, data)
        for name, seconds in loads.items():
            print(f"{name}: HTTP bulk load {lines / seconds:,.0f} triples/s")
        for server in servers:  # let background compaction after the bulk loads settle
            server.wait_ready()
        time.sleep(5)
        for name, make in mix.items():
            for clients in args.clients:
                for server in servers:  # interleaved, so drift on the machine hits both alike
                    run_mix(server, name, make, clients, min(1.0, args.seconds))  # warm-up
                    measure = run_mix(server, name, make, clients, args.seconds)
                    results.setdefault(name, {})[(server.name, clients)] = measure
                    print(
                        f"  {server.name:9} {name:14} x{clients}: {measure.throughput:8.1f} q/s  "
                        f"p50 {measure.percentile(0.5):7.2f} ms  p99 {measure.percentile(0.99):7.2f} ms"
                    )
        for server in servers if args.heavy else []:
            beside[server.name] = measure = beside_heavy(server, full_mix, args.heavy, args.seconds)
            print(
                f"  {server.name:9} point lookup beside {args.heavy} heavy: {measure.throughput:8.1f} q/s  "
                f"p50 {measure.percentile(0.5):7.2f} ms  p99 {measure.percentile(0.99):7.2f} ms"
            )
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    table = [
        "| workload | clients | sparqlrag q/s | oxigraph q/s | ratio | sparqlrag p50 / p99 ms | oxigraph p50 / p99 ms "
        "|",
        "|---|---|---|---|---|---|---|",
    ]
    for name, by_server in results.items():
        for clients in args.clients:
            ours, theirs = by_server[("sparqlrag", clients)], by_server[("oxigraph", clients)]
            table.append(
                f"| {name} | {clients} | {ours.throughput:.1f} | {theirs.throughput:.1f} | "
                f"{ours.throughput / theirs.throughput:.2f}x | {ours.percentile(0.5):.2f} / "
                f"{ours.percentile(0.99):.2f} | "
                f"{theirs.percentile(0.5):.2f} / {theirs.percentile(0.99):.2f} |"
            )
    if beside:
        ours, theirs = beside["sparqlrag"], beside["oxigraph"]
        table.append(
            f"| point lookup beside {args.heavy} heavy | 1 | {ours.throughput:.1f} | {theirs.throughput:.1f} | "
            f"{ours.throughput / theirs.throughput:.2f}x | {ours.percentile(0.5):.2f} / {ours.percentile(0.99):.2f} | "
            f"{theirs.percentile(0.5):.2f} / {theirs.percentile(0.99):.2f} |"
        )
    theirs_load = lines / loads["oxigraph"]
    for mode in ("sparqlrag", "sparqlrag no_transaction"):
        ours_load = lines / loads[mode]
        label = "checked" if mode == "sparqlrag" else "no_transaction"
        table.append(
            f"| HTTP bulk load, ours {label} (triples/s) | 1 | {ours_load:,.0f} | {theirs_load:,.0f} | "
            f"{ours_load / theirs_load:.2f}x | | |"
        )
    publish(f"sparql_http.py, {lines:,} triples, {args.seconds:g} s per cell", "\n".join(table), None, args.markdown)


if __name__ == "__main__":
    main()
