"""Knowledge core throughput: export, import, and import under another base IRI, against the
ingest that built the collection (what an import saves).

    .venv/bin/python bench/cores.py [--markdown]

The collection: the MuSiQue passages ingested offline (extraction, embedding, indexing), with
20 questions answered so that it has traces too. Each import goes into an empty data
directory; the imported collection answers a question to show it is whole.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingest import musique  # noqa: E402
from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.services import Models, Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402

BASE, OTHER = "http://bench.example/", "https://kb.example.org/"


def open_services(work: Path, base: str, models: Models) -> Services:
    work.mkdir(parents=True)
    return Services.open(
        Settings(data_dir=work, base_iri=base, reranker_model=None), EmbeddedStore(work / "store"), models=models
    )


T = TypeVar("T")


def close(services: Services) -> None:
    services.close()
    services.store.close()


def timed(run: Coroutine[Any, Any, T]) -> tuple[T, float]:
    started = time.monotonic()
    result = asyncio.run(run)
    return result, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    models = Models.load(Settings(data_dir=ROOT / "build", reranker_model=None))
    questions = [
        json.loads(line)["question"] for line in (SHARED / "musique100" / "queries.jsonl").read_text().splitlines()[:20]
    ]
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="cores-bench-") as work:
        root = Path(work)
        source = open_services(root / "source", BASE, models)
        _, figures["ingest_s"] = timed(source.pipeline.ingest_many(source.collections.iris("default"), musique()))
        for question in questions:
            asyncio.run(source.graph_rag.answer(source.collections.iris("default"), question))
        core = root / "musique.core.zip"
        manifest, figures["export_s"] = timed(source.cores.export("default", core))
        close(source)
        figures |= {
            "quads": manifest["counts"]["quads"],
            "chunks": manifest["counts"]["chunks"],
            "entities": manifest["counts"]["entities"],
            "core_mb": core.stat().st_size / 2**20,
        }
        for name, base in (("import", BASE), ("import_rebased", OTHER)):
            target = open_services(root / name, base, models)
            _, figures[f"{name}_s"] = timed(target.cores.import_(core))
            answer = asyncio.run(target.graph_rag.answer(target.collections.iris("default"), questions[0]))
            assert answer.passages, "the imported collection does not answer"
            close(target)
            print(name, f"{figures[f'{name}_s']:.1f} s", flush=True)
    figures["ingest_over_import"] = figures["ingest_s"] / figures["import_s"]
    f = figures
    table = "\n".join(
        markdown_table(
            [
                "quads",
                "chunks",
                "entity vectors",
                "core MB",
                "ingest s",
                "export s",
                "import s",
                "import, new base IRI, s",
                "ingest / import",
            ],
            [
                [
                    f"{f['quads']:.0f}",
                    f"{f['chunks']:.0f}",
                    f"{f['entities']:.0f}",
                    f"{f['core_mb']:.1f}",
                    f"{f['ingest_s']:.1f}",
                    f"{f['export_s']:.1f}",
                    f"{f['import_s']:.1f}",
                    f"{f['import_rebased_s']:.1f}",
                    f"{f['ingest_over_import']:.1f}x",
                ]
            ],
        )
    )
    publish("cores.py", table, figures, args.markdown)


if __name__ == "__main__":
    main()
