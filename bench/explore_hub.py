"""What the explorer's JSON route costs around a hub: `GET /api/v1/collections/{c}/graph` on an
entity with --facts facts (100,000 by default, one hub and its leaves), on `sparqlrag serve`.

    .venv/bin/python bench/explore_hub.py [--facts 100000] [--repeat 5] [--markdown]

The facts go in through the Graph Store Protocol into a fresh data directory. Each case is asked
--repeat times; the table gives the median and the slowest, the nodes and edges drawn, and
whether the answer says there is more. The server's query deadline is its default (30 s): every
case must answer 200 well inside it. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import server  # noqa: E402
from report import markdown_table, publish  # noqa: E402

BASE = "http://bench.example/"
CENTRE, LEAF = f"{BASE}id/hub/centre", f"{BASE}id/hub/n7"
CASES = [  # (what, entity, depth, limit)
    ("the hub, one hop, 40 nodes", CENTRE, 1, 40),
    ("the hub, two hops, 40 nodes", CENTRE, 2, 40),
    ("the hub, three hops, 500 nodes", CENTRE, 3, 500),
    ("a leaf, three hops, 500 nodes (the hub collapsed)", LEAF, 3, 500),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    rows, figures = [], {}
    with tempfile.TemporaryDirectory() as scratch, server(Path(scratch) / "data", BASE) as (client, _):
        assert client.post("/api/v1/collections", json={"name": "hub"}).status_code == 201
        body = "".join(f"<{CENTRE}> <{BASE}rel/links> <{BASE}id/hub/n{i}> .\n" for i in range(args.facts))
        started = time.monotonic()
        loaded = client.post(
            f"/store?graph={quote(BASE + 'graph/hub', safe='')}",
            content=body.encode(),
            headers={"Content-Type": "application/n-triples"},
        )
        if loaded.status_code not in (201, 204):
            raise SystemExit(f"the load answered {loaded.status_code}: {loaded.text[:300]}")
        print(f"{args.facts:,} facts loaded in {time.monotonic() - started:.1f} s")
        for what, entity, depth, limit in CASES:
            times, answer = [], {}
            for _ in range(args.repeat):
                started = time.monotonic()
                response = client.get(
                    "/api/v1/collections/hub/graph", params={"entity": entity, "depth": depth, "limit": limit}
                )
                times.append((time.monotonic() - started) * 1000)
                if response.status_code != 200:
                    raise SystemExit(f"{what}: {response.status_code} {response.text[:300]}")
                answer = response.json()
            median, slowest = statistics.median(times), max(times)
            nodes, edges = len(answer["nodes"]), len(answer["edges"])
            rows.append([what, f"{median:.0f}", f"{slowest:.0f}", str(nodes), str(edges), str(answer["truncated"])])
            figures[what] = {"median_ms": round(median), "max_ms": round(slowest), "nodes": nodes, "edges": edges}
    header = ["case", "ms median", "ms slowest", "nodes", "edges", "more"]
    title = f"Explorer's graph route around a hub of {args.facts:,} facts"
    publish(title, "\n".join(markdown_table(header, rows)), figures, args.markdown)


if __name__ == "__main__":
    main()
