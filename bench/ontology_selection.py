"""Ontology subset selection throughput: chunks/s through `Selector.select` for a 1,000-element
ontology (goal >= 50 chunks/s on 2 cores).

    .venv/bin/python bench/ontology_selection.py [--batch 16] [--markdown]

The ontology is every ontology in ../shared/data/ontologies read into one model (FOAF, ORG,
PROV-O, SKOS, OWL-Time, SOSA, DCMI Terms, the schema.org subset), padded to 1,000 elements with
subclasses named after pairs of existing classes. The chunks are ../shared/data/corpus split as
ingestion splits it (2,000 characters), selected 16 at a time as ingestion does (an extractor
is handed a document's chunks before it reads them). Each run starts with an empty embedding
cache; "warm" runs the same chunks again (what repeated phrases across a corpus approach).
"one-chunk documents" hands each chunk over as its own document, all at once, as an ingest of
many short documents does: what the extractor's queue batches while a selection runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED  # noqa: E402

from sparqlrag.extraction.chunker import split  # noqa: E402
from sparqlrag.extraction.guided import TypedOfflineExtractor  # noqa: E402
from sparqlrag.models.embedder import Embedder  # noqa: E402
from sparqlrag.ontology.owl import OntClass, OntologyModel, owlready  # noqa: E402
from sparqlrag.ontology.reading import read_ontology  # noqa: E402
from sparqlrag.ontology.selection import ElementIndex, OntologyGuide, Selector  # noqa: E402

ELEMENTS = 1000


def big_ontology() -> OntologyModel:
    triples = [
        t
        for path in sorted((SHARED / "ontologies").glob("*.ttl"))
        for t in read_ontology(path.read_bytes(), filename=path.name)
    ]
    model = owlready.model("http://bench.example/all", triples)
    bases = sorted(model.classes.values(), key=lambda c: c.iri)
    pairs = ((a, b) for a in bases for b in bases if a is not b)
    while len(model.classes) + len(model.properties) < ELEMENTS:
        a, b = next(pairs)
        iri = f"http://bench.example/all#{a.label.replace(' ', '')}Of{b.label.replace(' ', '')}"
        model.classes[iri] = OntClass(
            iri, f"{a.label} of {b.label}", f"A {a.label.lower()} that belongs to a {b.label.lower()}.", (a.iri,)
        )
    return model


async def _prepare_each(extractor: TypedOfflineExtractor, chunks: list[str]) -> None:
    await asyncio.gather(*(extractor.prepare([chunk]) for chunk in chunks))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--batch", type=int, default=16, help="chunks per select() call (default 16, what ingestion uses)"
    )
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    model = big_ontology()
    chunks = [p.text for f in sorted((SHARED / "corpus").rglob("*.txt")) for p in split(f.read_text())]
    embedder = Embedder(models_dir=Path(tempfile.mkdtemp(prefix="selection-bench-")))
    selector = Selector(embedder)
    started = time.monotonic()
    index = ElementIndex(model, embedder)
    index_s = time.monotonic() - started
    figures: dict[str, float] = {"elements": len(index), "chunks": len(chunks), "index_s": index_s}
    for run in ("cold", "warm"):
        started, sizes = time.monotonic(), []
        for start in range(0, len(chunks), args.batch):
            sizes += [
                len(s.classes) + len(s.properties) for s in selector.select(index, chunks[start : start + args.batch])
            ]
        seconds = time.monotonic() - started
        figures[f"{run}_chunks_per_s"] = len(chunks) / seconds
        figures["mean_subset_elements"] = sum(sizes) / len(sizes)
        print(run, f"{len(chunks) / seconds:.1f} chunks/s", flush=True)
    cold = Embedder(models_dir=Path(tempfile.mkdtemp(prefix="selection-bench-")))  # an empty cache again
    queue = TypedOfflineExtractor("bench", OntologyGuide(index, Selector(cold)))
    started = time.monotonic()
    asyncio.run(_prepare_each(queue, chunks))
    figures["documents_chunks_per_s"] = len(chunks) / (time.monotonic() - started)
    print("one-chunk documents", f"{figures['documents_chunks_per_s']:.1f} chunks/s", flush=True)
    f = figures
    table = "\n".join(
        markdown_table(
            [
                "ontology elements",
                "chunks",
                "index build s",
                "chunks/s (cold cache)",
                "chunks/s (warm)",
                "one-chunk documents, chunks/s (cold)",
                "mean subset size",
            ],
            [
                [
                    str(len(index)),
                    str(len(chunks)),
                    f"{index_s:.1f}",
                    f"{f['cold_chunks_per_s']:.1f}",
                    f"{f['warm_chunks_per_s']:.1f}",
                    f"{f['documents_chunks_per_s']:.1f}",
                    f"{f['mean_subset_elements']:.0f}",
                ]
            ],
        )
    )
    publish("ontology_selection.py", table, figures, args.markdown)


if __name__ == "__main__":
    main()
