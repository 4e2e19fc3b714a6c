"""What replacing a big graph costs over the Graph Store Protocol: `PUT /store?graph=` against
`POST /store?graph=` of the same triples, on `sparqlrag serve`.

    .venv/bin/python bench/graph_put.py [--triples 500000] [--once] [--markdown]

The triples are N-Triples, each subject new, made once into a scratch folder. For each route a
fresh data directory is served; the RSS of the whole process tree (server and store worker) is
sampled every 0.2 s (peak) and read again 5 s after the request (what it keeps). A second PUT
over the graph it made measures a replacement of a graph that has data. Run it on the commit
to compare (PYTHONPATH=that checkout). The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from processes import RssSampler, server  # noqa: E402
from report import markdown_table, publish  # noqa: E402

GRAPH = "http://bench.example/graph"
TRIPLES = {"Content-Type": "application/n-triples"}


def triples_file(folder: Path, count: int) -> Path:
    path = folder / f"triples-{count}.nt"
    with path.open("w", encoding="utf-8") as out:
        for i in range(count):
            out.write(f'<http://bench.example/s{i}> <http://bench.example/p{i % 50}> "value {i} of the bench" .\n')
    return path


def measure(data: Path, body: bytes, method: str, again: bool) -> dict[str, float]:
    figures: dict[str, float] = {}
    with server(data, "http://bench.example/") as (client, process):
        sampler = RssSampler(process.pid)
        for turn in ("first", "again") if again else ("first",):
            started = time.monotonic()
            response = client.request(method, "/store", params={"graph": GRAPH}, content=body, headers=TRIPLES)
            if response.status_code not in (201, 204):
                raise SystemExit(f"{method} answered {response.status_code}: {response.text[:300]}")
            figures[f"{turn}_s"] = time.monotonic() - started
        time.sleep(5)
        sampler.stop()
        figures |= {"peak_mb": sampler.peak, "after_mb": sampler.now()}
        counted = client.get(
            "/sparql",
            params={"query": f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH <{GRAPH}> {{ ?s ?p ?o }} }}"},
            headers={"Accept": "text/csv"},
        )
        figures["triples"] = float(counted.text.split()[1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triples", type=int, default=500_000)
    parser.add_argument("--once", action="store_true", help="one PUT, not a second over the graph it made")
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        body = triples_file(folder, args.triples).read_bytes()
        figures = {
            "PUT /store?graph=": measure(folder / "put", body, "PUT", again=not args.once),
            "POST /store?graph=": measure(folder / "post", body, "POST", again=False),
        }
    table = "\n".join(
        markdown_table(
            ["route", "first s", "again s", "peak MB", "MB 5 s after", "triples"],
            [
                [
                    name,
                    f"{f['first_s']:.1f}",
                    f"{f['again_s']:.1f}" if "again_s" in f else "",
                    f"{f['peak_mb']:.0f}",
                    f"{f['after_mb']:.0f}",
                    f"{f['triples']:.0f}",
                ]
                for name, f in figures.items()
            ],
        )
    )
    publish(f"Graph Store writes of {args.triples} triples", table, figures, args.markdown)


if __name__ == "__main__":
    main()
