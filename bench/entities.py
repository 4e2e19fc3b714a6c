"""Entity resolution on the shared multi-hop sets: entities before and after, merges by rule,
and how many merges are right.

Each set is ingested twice, with `entity_resolution` off and on (MuSiQue-100 from its GPT-3.5
triples, 2Wiki-101 with the offline extractor), and the script prints per set: entities (IRIs
with a name of their own that are not aliases), aliases, merges by rule, the ingest time both
ways, and a seeded sample of merges written to --sample-file for a person to check. With --batch N
the passages arrive N at a time, as a team adds documents: then a merge a later batch finds
rewrites earlier documents, and "written again" counts those rewrites.

Precision, automatically ("title check"): every passage of these sets is a Wikipedia intro about
the thing its title names. A merge whose target's name equals (by name key) a passage's title
is confirmed when the alias occurs in that passage, in its text or in its triples' entity list
(an intro names its subject's other names); one whose alias equals a title is confirmed when the
target's name occurs there. Merges of which neither side is a title are counted as unchecked,
and printed in the sample for a person.

    python bench/entities.py [--dataset DIR ...] [--sample 60] [--batch N] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import markdown_table, publish  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.names import name_key  # noqa: E402
from sparqlrag.extraction.offline import OfflineExtractor  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.extraction.triples_import import PreExtracted, read_triples  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store import EmbeddedStore  # noqa: E402
from sparqlrag.store.select import select  # noqa: E402
from sparqlrag.store.vocab import SPARQL_PREFIXES  # noqa: E402

BASE = "http://localhost:7878/"
KG, SRC = f"<{BASE}graph/default>", f"<{BASE}graph/default/source>"


async def ingest(dataset: Path, work: Path, resolution: bool, batch: int) -> tuple[Services, EmbeddedStore, float]:
    corpus = read_jsonl(dataset / "corpus.jsonl")
    triples = dataset / "triples.jsonl"
    extractor = PreExtracted(read_triples(triples)) if triples.is_file() else OfflineExtractor()
    work.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(work / "store")
    settings = Settings(data_dir=work, base_iri=BASE, reranker_model=None, entity_resolution=resolution)
    services = Services.open(settings, store, extractor)
    started = time.monotonic()
    sources = [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), title=p["title"]) for p in corpus]
    failures = []
    for start in range(
        0, len(sources), batch
    ):  # one batch resolves its own definitions; later ones may rewrite earlier documents
        failures += [
            r
            for r in await services.pipeline.ingest_many(
                services.collections.iris("default"), sources[start : start + batch]
            )
            if isinstance(r, Exception)
        ]
    if failures:
        raise SystemExit(f"{len(failures)} passages failed to ingest, first: {failures[0]}")
    return services, store, time.monotonic() - started


def counts(store: EmbeddedStore) -> dict[str, int]:
    (row,) = select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT (COUNT(DISTINCT ?e) AS ?entities) WHERE {{ GRAPH {KG} {{
        ?e rdfs:label ?l FILTER(STRSTARTS(STR(?e), "{BASE}id/")) FILTER NOT EXISTS {{ ?e owl:sameAs ?c }} }} }}""",
    )
    (aliases,) = select(
        store, SPARQL_PREFIXES + f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {KG} {{ ?e skos:altLabel ?l }} }}"
    )
    (facts,) = select(store, f"SELECT (COUNT(*) AS ?n) WHERE {{ GRAPH {KG} {{ ?s ?p ?o }} }}")
    return {"entities": int(row["entities"]), "aliases": int(aliases["n"]), "triples": int(facts["n"])}


def merges(store: EmbeddedStore) -> list[dict[str, str]]:
    """Every merge: alias name, target name, rule, and the documents of its evidence."""
    return select(
        store,
        SPARQL_PREFIXES
        + f"""SELECT ?m ?alias ?target ?rule (SAMPLE(?name) AS ?target_name)
        (GROUP_CONCAT(DISTINCT STR(?doc); separator=" ") AS ?docs) WHERE {{
        GRAPH {SRC} {{ ?m sr:rule ?rule ; sr:alias ?alias ; rdf:reifies <<( ?a owl:sameAs ?target )>> ;
          prov:wasDerivedFrom ?chunk . ?chunk prov:wasDerivedFrom ?doc }}
        OPTIONAL {{ GRAPH {KG} {{ ?target rdfs:label ?name }} }} }} GROUP BY ?m ?alias ?target ?rule""",
    )


def _words(text: str) -> str:
    """The text as name keys compare it, word by word (so "Saxe- Eisenach" is "saxe eisenach")."""
    return " " + " ".join(name_key(word) for word in text.split()) + " "


def _occurs(name: str, passage: dict, entities: list[str]) -> bool:
    key = name_key(name)
    return any(name_key(e) == key for e in entities) or _words(name).replace(" the ", " ", 1) in _words(passage["text"])


def title_verdicts(found: list[dict[str, str]], dataset: Path) -> list[bool | None]:
    """Per merge: True (confirmed), False (refuted) or None (neither name is a title); see the
    module's docstring."""
    corpus = read_jsonl(dataset / "corpus.jsonl")
    triples = dataset / "triples.jsonl"
    entity_lists = {r["passage_id"]: r.get("entities", []) for r in read_jsonl(triples)} if triples.is_file() else {}
    by_title: dict[str, list[dict]] = {}
    for passage in corpus:
        by_title.setdefault(name_key(passage["title"]), []).append(passage)
    verdicts: list[bool | None] = []
    for merge in found:
        target = merge.get("target_name") or merge["target"].rsplit("/", 1)[-1].replace("-", " ")
        verdict = None
        for titled, other in ((target, merge["alias"]), (merge["alias"], target)):
            passages = by_title.get(name_key(titled), [])
            if passages:
                verdict = any(_occurs(other, p, entity_lists.get(p["id"], [])) for p in passages)
                break
        verdicts.append(verdict)
    return verdicts


async def measure(dataset: Path, sample: int, sample_file: Path, batch: int) -> dict[str, object]:
    result: dict[str, object] = {}
    for resolution in (False, True):
        with tempfile.TemporaryDirectory(prefix="entities-bench-") as work:
            services, store, seconds = await ingest(dataset, Path(work), resolution, batch)
            try:
                rewritten = services.pipeline.stats.documents["ready"] - len(read_jsonl(dataset / "corpus.jsonl"))
                row: dict[str, object] = {**counts(store), "ingest_s": round(seconds, 1), "written_again": rewritten}
                if resolution:
                    found = merges(store)
                    by_rule: dict[str, int] = {}
                    for merge in found:
                        by_rule[merge["rule"]] = by_rule.get(merge["rule"], 0) + 1
                    verdicts = title_verdicts(found, dataset)
                    checked = [v for v in verdicts if v is not None]
                    row |= {
                        "merges": len(found),
                        "by_rule": by_rule,
                        "title_confirmed": sum(checked),
                        "title_checkable": len(checked),
                    }
                    chosen = random.Random(0).sample(range(len(found)), min(sample, len(found)))
                    with sample_file.open("a") as out:
                        for index in chosen:
                            out.write(
                                json.dumps({"set": dataset.name, **found[index], "title_check": verdicts[index]}) + "\n"
                            )
                result["on" if resolution else "off"] = row
            finally:
                services.close()
                store.close()
        print(
            dataset.name,
            "resolution",
            "on" if resolution else "off",
            json.dumps(result["on" if resolution else "off"]),
            file=sys.stderr,
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, nargs="+", default=[SHARED / "2wiki101", SHARED / "musique100"])
    parser.add_argument(
        "--sample", type=int, default=60, help="merges per set written to --sample-file for a person to check"
    )
    parser.add_argument("--sample-file", type=Path, default=Path("entities-sample.jsonl"))
    parser.add_argument("--batch", type=int, default=100_000, help="passages per ingest call (default: all in one)")
    parser.add_argument("--markdown", action="store_true", help="append the table to bench/RESULTS.md")
    args = parser.parse_args()
    args.sample_file.unlink(missing_ok=True)
    report: dict[str, dict[str, Any]] = {
        dataset.name: asyncio.run(measure(dataset, args.sample, args.sample_file, args.batch))
        for dataset in args.dataset
    }
    rows = []
    for name, row in report.items():
        off, on = row["off"], row["on"]
        rules = ", ".join(f"{rule} {n}" for rule, n in sorted(on["by_rule"].items()))
        share = f" ({100 * on['title_confirmed'] / on['title_checkable']:.1f}%)" if on["title_checkable"] else ""
        rows.append(
            [
                name,
                f"{off['entities']} -> {on['entities']}",
                str(on["aliases"]),
                str(on["merges"]),
                rules,
                f"{on['title_confirmed']}/{on['title_checkable']}{share}",
                f"{off['ingest_s']} -> {on['ingest_s']}",
                str(on["written_again"]),
            ]
        )
    header = [
        "set",
        "entities off -> on",
        "aliases",
        "merges",
        "by rule",
        "title check",
        "ingest s off -> on",
        "written again",
    ]
    print(f"sample of merges for a person to check: {args.sample_file}", file=sys.stderr)
    publish("entities.py", "\n".join(markdown_table(header, rows)), report, args.markdown)


if __name__ == "__main__":
    main()
