"""A store of record that floods or trickles (issue 35, hole 5): how long `/sparql?timeout=5`
takes to answer, and the server's peak RSS, when the store behind `--store-url` sends an endless
result, its body one byte a second, its headers one byte a second, or a few MB and then one byte
a second. An answer that had begun to stream when it failed is cut (the connection closed
before its end): the table says after how many bytes.

`sparqlrag serve` runs with `store_url` pointing at tests/hostile_store.py, a proxy in front of a
real `oxigraph serve` that passes everything through except queries carrying a marker. After
each bad answer an `ASK {}` checks that the server goes on serving.

    .venv/bin/python bench/hostile_store.py [--timeout 5] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from processes import RssSampler, server
from report import markdown_table, publish

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.hostile_store import HostileStore  # noqa: E402
from tests.oxigraph_server import start_oxigraph  # noqa: E402

RESULTS = {"Accept": "application/sparql-results+json"}


def _answer(client: httpx.Client, query: dict[str, str]) -> tuple[int, str, int, bool]:
    """Status, error code, bytes received, and whether the answer was cut before its end."""
    received, head = 0, b""
    with client.stream("GET", "/sparql", params=query, headers=RESULTS) as answered:
        try:
            for piece in answered.iter_bytes():
                received += len(piece)
                head += piece[: max(0, 65536 - len(head))]
        except httpx.RemoteProtocolError:
            return answered.status_code, "", received, True
    error = json.loads(head).get("error", "") if answered.status_code >= 400 else ""
    return answered.status_code, error, received, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    rows: list[list[str]] = []
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        upstream = start_oxigraph(Path(folder) / "oxigraph")
        bad = HostileStore(upstream.url)
        env = {
            "SPARQLRAG_STORE_URL": bad.url + "/query",
            "SPARQLRAG_STORE_UPDATE_URL": upstream.url + "/update",
            "SPARQLRAG_STORE_GSP_URL": upstream.url + "/store",
            "SPARQLRAG_STORE_TRIPLE_TERMS": "true",
        }
        try:
            with server(Path(folder) / "data", "http://bench.example/", env) as (client, process):
                rss = RssSampler(process.pid)
                try:
                    for marker in ("FLOOD", "TRICKLE", "SLOWHEAD", "STALL"):
                        started = time.monotonic()
                        query = {"query": f"SELECT ?x WHERE {{ ?x ?p ?o }} # {marker}", "timeout": str(args.timeout)}
                        status, error, received, cut = _answer(client, query)
                        took = time.monotonic() - started
                        after = client.get("/sparql", params={"query": "ASK {}"}, headers=RESULTS).status_code
                        figures[marker] = {"status": status, "error": error, "seconds": took}
                        figures[marker] |= {"received_bytes": received, "cut": cut}
                        said = f"{status} {error}" if not cut else f"{status}, cut after {received / 1e6:,.0f} MB"
                        rows.append([marker, said, f"{took:.2f}", str(after)])
                finally:
                    rss.stop()
                figures["peak_rss_mb"] = rss.peak
        finally:
            bad.close()
            upstream.stop()
    rows.append(["peak RSS of the server", "", f"{figures['peak_rss_mb']:.0f} MB", ""])
    table = "\n".join(markdown_table(["store answers", "/sparql answer", "seconds", "ASK {} after"], rows))
    publish(
        f"A flooding or trickling store, timeout {args.timeout:g} s (bench/hostile_store.py)",
        table,
        figures,
        args.markdown,
    )


if __name__ == "__main__":
    main()
