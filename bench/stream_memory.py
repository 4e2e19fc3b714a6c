"""What a big answer costs in memory: the RSS of `sparqlrag serve` (the server and its store
process) while a client reads a SELECT of `--rows` rows, against its RSS idle. The rows are a
cross product of a few thousand triples, so the store is small and the answer is all that
grows; the client reads the answer as it comes and drops it. Also prints when the first byte
came and how long the whole answer took.

    .venv/bin/python bench/stream_memory.py [--rows 10000000] [--accept application/sparql-results+json] [--markdown]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from processes import RssSampler, server
from report import markdown_table, publish

BASE = "http://bench.example/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--accept", default="application/sparql-results+json")
    parser.add_argument("--markdown", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()

    subjects = math.isqrt(args.rows - 1) + 1
    data = Path(tempfile.mkdtemp(prefix="stream-memory-")) / "data"
    limits = {"SPARQLRAG_MAX_RESULT_BYTES": str(1 << 40), "SPARQLRAG_MAX_QUERY_TIMEOUT": "3600"}
    with server(data, BASE, limits) as (client, process):
        triples = " ".join(f'<http://e/s{i}> <http://e/p> "{i}" .' for i in range(subjects))
        inserted = client.post(
            "/sparql", content=f"INSERT DATA {{ {triples} }}", headers={"Content-Type": "application/sparql-update"}
        )
        assert inserted.status_code == 204, inserted.text
        sampler = RssSampler(process.pid, every=0.05)
        time.sleep(1)
        idle = sampler.now()
        query = f"SELECT ?a ?b WHERE {{ ?a <http://e/p> ?x . ?b <http://e/p> ?y }} LIMIT {args.rows}"
        started = time.monotonic()
        first = None
        size = 0
        with client.stream(
            "POST",
            "/sparql",
            params={"timeout": "3600"},
            content=query,
            headers={"Content-Type": "application/sparql-query", "Accept": args.accept},
        ) as response:
            assert response.status_code == 200, response.read()
            for piece in response.iter_raw():
                first = first if first is not None else time.monotonic() - started
                size += len(piece)
        seconds = time.monotonic() - started
        sampler.stop()
    rows = [
        [
            f"{args.rows:,}",
            args.accept,
            f"{size / 1e6:,.0f}",
            f"{first or 0:.2f}",
            f"{seconds:.1f}",
            f"{idle:.0f}",
            f"{sampler.peak:.0f}",
            f"{sampler.peak - idle:.0f}",
        ]
    ]
    header = ["rows", "format", "MB sent", "first byte s", "all s", "RSS idle MB", "RSS peak MB", "peak - idle MB"]
    figures = {"rows": args.rows, "bytes": size, "first_byte_s": first, "seconds": seconds}
    figures |= {"rss_idle_mb": idle, "rss_peak_mb": sampler.peak}
    publish("stream_memory.py", "\n".join(markdown_table(header, rows)), figures, args.markdown)


if __name__ == "__main__":
    main()
