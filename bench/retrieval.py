"""Retrieval quality and speed of Document RAG and Graph RAG.

    .venv/bin/python bench/retrieval.py [--dataset DIR ...] [--metaqa DIR] [--metaqa-queries FILE]
                                        [--latency [--latency-dir DIR] [--latency-scorers facts text]]
                                        [--skip-passages] [--scorer facts|text]
                                        [--no-resolution] [--markdown]

Passages (each --dataset DIR: `corpus.jsonl` {id,title,text}, `queries.jsonl` {id,question,
gold_ids}, optional `triples.jsonl` {passage_id,entities,triples}): every passage is ingested as
one document (title line + text), its knowledge from triples.jsonl when the folder has one,
else from the offline extractor. Each question then retrieves 8 passages per mode: keyword,
vector, hybrid (also at other fusion weights), graph (the walk's ranking of source passages),
graph+document (that fused with keyword search, what `ask --mode hybrid` answers from) and
pagerank (personalized PageRank over the graph index, what `ask` answers from by default; its
figures appear again under "default"). recall@k = share of a
question's gold passages in the top k, averaged; all-gold@8 = share of questions with every
gold passage in the top 8; ms/query p50 and p95.

Answers (sets whose questions have gold answers: MuSiQue, MetaQA): the answer text a user reads,
offline, for Document RAG (hybrid) and each Graph RAG mode, with the modes' default options.
containment = share of questions whose answer contains a gold answer, both normalised as SQuAD
does (lowercase, punctuation and the articles a/an/the removed, spaces collapsed); yes/no
questions (gold "yes" or "no") counted apart; and the median answer length in characters.

MetaQA (--metaqa DIR: `kb.txt` subject|relation|object, `queries.jsonl` {hops,question,
topic_entity,answers}): the KB is loaded as the knowledge graph (labels from the names) and
indexed; each question ([brackets] dropped) runs Graph RAG with its defaults (--scorer text:
the path-text edge scorer, one model run per candidate, for the graph modes above too). Per hop: grounding
(topic entity is the best seed / among the seeds), answer recall inside the selected edges, and
Hits@1 of the top-ranked entity (the best-scored entity of the selected edges, topic excluded).

Latency (--latency): the retrieval stages (no LLM) of the default mode on the MetaQA graph cut to 10k triples, whole
(~170k with labels), and repeated with renamed relations to ~1M; p50 and p95 over the first 100
questions, with each edge scorer (facts, text); where the fact index is big enough to be searched
through its float16 shortlist, how many of the exact search's 5 nearest facts it finds.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pyoxigraph import Literal, NamedNode, Quad, RdfFormat, serialize  # noqa: E402
from report import publish  # noqa: E402
from shared_data import SHARED, read_jsonl  # noqa: E402

from sparqlrag.config import Settings  # noqa: E402
from sparqlrag.extraction.knowledge import Extractor  # noqa: E402
from sparqlrag.extraction.offline import OfflineExtractor  # noqa: E402
from sparqlrag.extraction.plans import Source  # noqa: E402
from sparqlrag.extraction.triples_import import PreExtracted, read_triples  # noqa: E402
from sparqlrag.retrieval.document_rag import Passage  # noqa: E402
from sparqlrag.retrieval.options import (  # noqa: E402
    DEFAULT_GRAPH_MODE,
    DOCUMENT_MODES,
    DocumentRagOptions,
    GraphMode,
    GraphRagOptions,
)
from sparqlrag.retrieval.question import EmptyGraph  # noqa: E402
from sparqlrag.services import Services  # noqa: E402
from sparqlrag.store import EmbeddedStore, vocab  # noqa: E402
from sparqlrag.store.local_vectors import LocalVectors  # noqa: E402
from sparqlrag.store.select import lexical  # noqa: E402
from sparqlrag.store.shortlist import SHORTLIST_ROWS  # noqa: E402
from sparqlrag.store.vocab import Iris  # noqa: E402

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = set(string.punctuation)
LATENCY_SIZES = {"10k": (6_000, 1), "170k": (None, 1), "1M": (None, 8)}  # MetaQA KB lines, copies
SWEEP = [(0.5, 0.5), (0.75, 0.25)]  # hybrid fusion weights shown beside the configured ones
DEFAULT_MODE: GraphMode = DEFAULT_GRAPH_MODE  # the mode `ask` answers from by default, reported again as "default"
BASE = "http://bench.example/"
IRIS = Iris(BASE)
# Published or previously measured figures for these exact files (../shared/data/README.md), in %.
REFERENCE = {
    "musique100": {
        "recall@5": {
            "BM25 (measured here)": 50.9,
            "all-MiniLM-L6-v2 dense (measured here)": 62.2,
            "HippoRAG 2 (1,000 questions, NV-Embed-v2)": 74.7,
        }
    },
    "2wiki101": {
        "recall@5": {"BM25 (measured here)": 64.9, "all-MiniLM-L6-v2 dense (measured here)": 65.1},
        "all-gold@8": {
            "vector DB (fast-graphrag)": 41.6,
            "LightRAG": 44.6,
            "nano-graphrag": 73.3,
            "fast-graphrag": 93.1,
        },
    },
}


def open_services(
    work: Path, extractor: Extractor | None = None, resolution: bool = True
) -> tuple[Services, EmbeddedStore]:
    work.mkdir(parents=True, exist_ok=True)
    store = EmbeddedStore(work / "store")
    settings = Settings(data_dir=work, base_iri=BASE, reranker_model=None, entity_resolution=resolution)
    return Services.open(settings, store, extractor), store


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# -- passages -----------------------------------------------------------------------------------


async def evaluate(
    dataset: Path, work: Path, options: GraphRagOptions, resolution: bool = True
) -> tuple[dict[str, dict[str, float]], dict[str, object]]:
    corpus, queries = read_jsonl(dataset / "corpus.jsonl"), read_jsonl(dataset / "queries.jsonl")
    triples = dataset / "triples.jsonl"
    extractor = PreExtracted(read_triples(triples)) if triples.is_file() else OfflineExtractor()
    services, store = open_services(work, extractor, resolution)
    started = time.monotonic()
    sources = [Source(p["id"], f"{p['title']}\n\n{p['text']}".encode(), title=p["title"]) for p in corpus]
    failures = [r for r in await services.pipeline.ingest_many(IRIS, sources) if isinstance(r, Exception)]
    if failures:
        raise SystemExit(f"{len(failures)} passages failed to ingest, first: {failures[0]}")
    ingest = {"ingest_s": time.monotonic() - started, "passages": len(corpus), "knowledge": extractor.name}
    ingest["graph_index"] = graph_index_figures(services, work)
    metrics = await recall_by_mode(services, queries, options, IRIS.document("").value)
    if any(query.get("answers") for query in queries):
        ingest["answers"] = await answers_by_mode(services, queries, options)
    services.close()
    store.close()
    return metrics, ingest


def normalised(text: str) -> str:
    """SQuAD's answer normalisation: lowercase, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def contains_gold(answer: str, golds: list[str]) -> bool:
    said = f" {normalised(answer)} "
    return any(f" {gold} " in said for gold in map(normalised, golds) if gold)


async def answers_by_mode(
    services: Services, queries: list[dict], options: GraphRagOptions
) -> dict[str, dict[str, float]]:
    """Per answering mode: containment of the non-yes/no questions with gold answers (%), the
    yes/no questions' (%), their counts, and the median answer length (characters)."""
    graph = services.graph_rag

    def graph_answer(mode: GraphMode) -> Callable[[str], Awaitable[str]]:
        async def answer(question: str) -> str:
            try:
                return (await graph.answer(IRIS, question, options, mode=mode)).answer
            except EmptyGraph:
                return ""

        return answer

    async def document_answer(question: str) -> str:
        return (await services.document_rag.answer(IRIS, question, DocumentRagOptions())).answer

    runs: dict[str, Callable[[str], Awaitable[str]]] = {"document hybrid": document_answer}
    runs |= {"graph": graph_answer("graph"), "graph+document": graph_answer("hybrid")}
    runs |= {"pagerank": graph_answer("pagerank"), "evidence": graph_answer("evidence")}
    asked = [query for query in queries if query.get("answers")]
    out: dict[str, dict[str, float]] = {}
    for name, answer in runs.items():
        found = {"open": 0, "yes/no": 0}
        counted = {"open": 0, "yes/no": 0}
        lengths = []
        for query in asked:
            said = await answer(query["question"])
            kind = "yes/no" if {normalised(a) for a in query["answers"]} <= {"yes", "no"} else "open"
            counted[kind] += 1
            found[kind] += contains_gold(said, query["answers"])
            lengths.append(len(said))
        out[name] = {
            "containment": 100 * found["open"] / max(counted["open"], 1),
            "questions": counted["open"],
            "yes/no containment": 100 * found["yes/no"] / max(counted["yes/no"], 1),
            "yes/no questions": counted["yes/no"],
            "median_chars": statistics.median(lengths) if lengths else 0,
        }
    out["default"] = out[DEFAULT_MODE]
    return out


def answer_table(name: str, answers: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        f"\n### {name}: the answer a user reads (offline)\n",
        "| mode | contains a gold answer | questions | yes/no: contains | yes/no questions | median chars |",
        "|---|---|---|---|---|---|",
    ]
    for mode, row in answers.items():
        lines.append(
            f"| {mode} | {row['containment']:.1f} | {row['questions']:.0f} | {row['yes/no containment']:.1f} | "
            f"{row['yes/no questions']:.0f} | {row['median_chars']:.0f} |"
        )
    return lines


def graph_index_figures(services: Services, work: Path) -> dict[str, float]:
    """The graph index of the collection `default`: its rows, its file, the time to rebuild it
    from the store and to read it into memory, and what that memory costs (RSS before and after)."""
    index = services.pipeline.indexer.graph
    started = time.monotonic()
    index.rebuild(IRIS)
    rebuilt = time.monotonic() - started
    before = resident_mb()
    started = time.monotonic()
    view = index.view("default")
    return {
        "rows": sum(len(rows) for rows in index.rows("default")),
        "file_mb": sum(f.stat().st_size for f in work.glob("graph.sqlite*")) / 2**20,
        "rebuild_s": rebuilt,
        "view_s": time.monotonic() - started,
        "view_rss_mb": resident_mb() - before,
        "nodes": len(view.names),
        "edges": view.graph.ecount(),
        "passages": view.passages,
    }


def resident_mb() -> float:
    """This process's resident memory (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def recall_by_mode(
    services: Services,
    queries: list[dict],
    options: GraphRagOptions,
    prefix: str,
    copies: int = 1,
) -> dict[str, dict[str, float]]:
    """recall@2/@5, all-gold@8 and ms/query of every mode over the collection `default`, whose
    documents are named `prefix` + passage id. `copies` > 1: the corpus holds each passage that
    many times (ids `id~2`, `id~3`, ...; bench/scale.py): each mode retrieves `copies` times as
    many passages, and a copy counts as its passage, once."""
    rag, graph = services.document_rag, services.graph_rag
    k = 8 * copies

    def mode(name: str, weights: tuple[float, float] | None = None) -> Callable[[str], Awaitable[list[Passage]]]:
        return lambda question: rag.retrieve(IRIS, question, DocumentRagOptions(mode=name, k=k, weights=weights))

    async def graph_mode(question: str) -> list[Passage]:
        return (await graph.retrieve(IRIS, question, options.model_copy(update={"k": k}), mode="graph")).passages

    async def fused_mode(question: str) -> list[Passage]:
        return (await graph.retrieve(IRIS, question, options.model_copy(update={"k": k}), mode="hybrid")).passages

    async def pagerank_mode(question: str) -> list[Passage]:
        walk = await graph.retrieve(IRIS, question, options.model_copy(update={"k": k}), mode="pagerank")
        return walk.passages

    async def evidence_mode(question: str) -> list[Passage]:
        return (await graph.retrieve(IRIS, question, options.model_copy(update={"k": k}), "evidence")).passages

    async def bridged(question: str) -> list[Passage]:  # the default's k passages, then its bridges
        return (await graph.retrieve(IRIS, question, options, "evidence")).passages

    def ranked(passages: list[Passage]) -> list[str]:
        ids = [unquote(p.document.removeprefix(prefix)) for p in passages]
        return ids if copies == 1 else list(dict.fromkeys(i.split("~")[0] for i in ids))

    runs: dict[str, Callable[[str], Awaitable[list[Passage]]]] = {name: mode(name) for name in DOCUMENT_MODES}
    runs |= {f"hybrid {w[0]}/{w[1]}": mode("hybrid", w) for w in SWEEP}
    runs |= {"graph": graph_mode, "graph+document": fused_mode, "pagerank": pagerank_mode, "evidence": evidence_mode}
    shown = (options.k + options.bridges) * copies  # what the default shows: its k passages and its bridges
    metrics: dict[str, dict[str, float]] = {}
    for name, retrieve in runs.items():
        r2 = r5 = all8 = rkb = 0.0
        times = []
        for query in queries:
            started = time.perf_counter()
            found = ranked(await retrieve(query["question"]))
            times.append(1000 * (time.perf_counter() - started))
            gold = set(query["gold_ids"])
            r2 += len(gold & set(found[:2])) / len(gold)
            r5 += len(gold & set(found[:5])) / len(gold)
            rkb += len(gold & set(found[:shown])) / len(gold)
            all8 += gold <= set(found[:8])
        n = len(queries)
        metrics[name] = {
            "recall@2": 100 * r2 / n,
            "recall@5": 100 * r5 / n,
            "all-gold@8": 100 * all8 / n,
            f"recall@{shown}": 100 * rkb / n,
            "p50_ms": percentile(times, 0.5),
            "p95_ms": percentile(times, 0.95),
        }
    bridges = 0.0  # the default's own k passages and bridges, against every mode's first k + bridges
    bridge_count = 0
    for query in queries:
        passages = await bridged(query["question"])
        bridge_count += sum(bool(p.bridge) for p in passages)
        gold = set(query["gold_ids"])
        bridges += len(gold & set(ranked(passages))) / len(gold)
    metrics["evidence"]["recall@k+bridges"] = 100 * bridges / len(queries)
    metrics["evidence"]["bridges/question"] = bridge_count / len(queries)
    metrics["evidence"]["shown"] = shown
    metrics["default"] = metrics[DEFAULT_MODE]
    return metrics


def passage_table(
    name: str, metrics: dict[str, dict[str, float]], ingest: dict[str, object], variant: str = ""
) -> list[str]:
    graph = ingest["graph_index"]
    assert isinstance(graph, dict)
    lines = [
        f"\n### {name}: passage retrieval{variant} ({ingest['passages']} passages, knowledge by {ingest['knowledge']}, "
        f"ingested in {ingest['ingest_s']:.0f} s; graph index: {graph['rows']:.0f} rows, {graph['file_mb']:.1f} MB on "
        f"disk, rebuilt in {graph['rebuild_s']:.1f} s, read in {graph['view_s']:.1f} s into {graph['nodes']:.0f} nodes "
        f"and {graph['edges']:.0f} edges, +{graph['view_rss_mb']:.0f} MB RSS)\n",
        "| mode | recall@2 | recall@5 | all-gold@8 | ms/query p50 | p95 |",
        "|---|---|---|---|---|---|",
    ]
    for mode, m in metrics.items():
        lines.append(
            f"| {mode} | {m['recall@2']:.1f} | {m['recall@5']:.1f} | {m['all-gold@8']:.1f} | "
            f"{m['p50_ms']:.0f} | {m['p95_ms']:.0f} |"
        )
    for metric, refs in REFERENCE.get(name, {}).items():
        for ref, value in refs.items():
            lines.append(
                f"| {ref} (reference) | | {value if metric == 'recall@5' else ''} | "
                f"{value if metric == 'all-gold@8' else ''} | | |"
            )
    evidence = metrics.get("evidence", {})
    if "recall@k+bridges" in evidence:
        shown = f"recall@{evidence['shown']:.0f}"
        lines.append(
            f"\nBridges: the default's passages and its bridges ({evidence['bridges/question']:.2f} a question) "
            f"reach recall {evidence['recall@k+bridges']:.1f}; hybrid's first {shown[7:]}: "
            f"{metrics['hybrid'][shown]:.1f}; pagerank's: {metrics['pagerank'][shown]:.1f}."
        )
    return lines


# -- MetaQA -------------------------------------------------------------------------------------


def metaqa_quads(kb: Path, limit: int | None = None, copies: int = 1) -> list[Quad]:
    """The KB as knowledge-graph quads: entities and relations named as ingestion names them,
    each with its label. `copies` > 1 repeats every triple with renamed relations (scale tests)."""
    graph, labels, quads = IRIS.knowledge_graph, dict[NamedNode, str](), list[Quad]()
    lines = [line.split("|") for line in kb.read_text(encoding="utf-8").splitlines() if line.count("|") == 2]
    for subject, relation, obj in lines[:limit]:
        for copy in range(copies):
            name = relation.replace("_", " ") + (f" {copy}" if copy else "")
            s, p, o = IRIS.entity(subject), IRIS.predicate(name), IRIS.entity(obj)
            quads.append(Quad(s, p, o, graph))
            labels |= {s: subject, p: name, o: obj}
    return quads + [Quad(node, vocab.RDFS_LABEL, Literal(label), graph) for node, label in labels.items()]


async def load_graph(work: Path, quads: list[Quad]) -> tuple[Services, EmbeddedStore, dict[str, float]]:
    services, store = open_services(work)
    started = time.monotonic()
    store.add_quads(serialize(quads, format=RdfFormat.N_QUADS))
    loaded = time.monotonic() - started
    entities, facts = await services.pipeline.indexer.index_graph(IRIS)
    index = services.pipeline.indexer.graph
    return (
        services,
        store,
        {
            "triples": len(quads),
            "load_s": loaded,
            "index_s": time.monotonic() - started - loaded,
            "entity_vectors": entities,
            "fact_vectors": facts,
            "graph_index_rows": sum(len(rows) for rows in index.rows("default")),
            "graph_index_mb": sum(f.stat().st_size for f in work.glob("graph.sqlite*")) / 2**20,
        },
    )


async def metaqa(
    directory: Path, queries_file: Path, work: Path, options: GraphRagOptions
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    services, store, loading = await load_graph(work, metaqa_quads(directory / "kb.txt"))
    queries = read_jsonl(queries_file)
    per_hop: dict[int, dict[str, float]] = {}
    lengths: dict[int, list[int]] = {}
    for query in queries:
        topic, answers = IRIS.entity(query["topic_entity"]).value, {IRIS.entity(a).value for a in query["answers"]}
        question = re.sub(r"[\[\]]", "", query["question"])
        walk = await services.graph_rag.retrieve(IRIS, question, options, mode="graph")
        seeds = [s.entity for s in walk.seeds]
        best: dict[str, float] = {}
        for edge in walk.edges:
            for node in (lexical(edge.fact.subject), lexical(edge.fact.object)):
                if node != topic:
                    best[node] = max(best.get(node, -1.0), edge.score)
        top = max(best, key=best.__getitem__) if best else None
        try:
            said = (await services.graph_rag.answer(IRIS, question, options, mode=DEFAULT_MODE)).answer
        except EmptyGraph:
            said = ""
        row = per_hop.setdefault(
            query["hops"],
            {"questions": 0, "grounding@1": 0, "grounding": 0, "answer_recall": 0, "hits@1": 0, "contains": 0},
        )
        lengths.setdefault(query["hops"], []).append(len(said))
        row["contains"] += contains_gold(said, query["answers"])
        row["questions"] += 1
        row["grounding@1"] += bool(seeds) and seeds[0] == topic
        row["grounding"] += topic in seeds
        row["answer_recall"] += len(answers & set(best)) / len(answers)
        row["hits@1"] += top in answers
    services.close()
    store.close()
    table = {
        f"{hops}-hop": {k: (100 * value / row["questions"] if k != "questions" else value) for k, value in row.items()}
        | {"median_answer_chars": statistics.median(lengths[hops])}
        for hops, row in sorted(per_hop.items())
    }
    return table, loading


# -- latency ------------------------------------------------------------------------------------


async def latency_graph(
    work: Path, quads: Callable[[], list[Quad]]
) -> tuple[Services, EmbeddedStore, dict[str, float]]:
    """A latency graph, loaded and indexed, or reopened from `work` when a run kept it there."""
    record = work / "loading.json"
    if record.is_file():
        services, store = open_services(work)
        return services, store, json.loads(record.read_text())
    services, store, loading = await load_graph(work, quads())
    record.write_text(json.dumps(loading))
    return services, store, loading


def shortlist_recall(services: Services, questions: list[str]) -> float:
    """How many of the question's 5 nearest facts the float16 shortlist finds (%), against reading
    every float32 vector."""
    index = services.vectors
    assert isinstance(index, LocalVectors), "the shortlist is the local index's"
    vectors, found = services.embedder.embed(questions), []
    for exact in (False, True):
        index.shortlist_rows = 10**12 if exact else SHORTLIST_ROWS
        found.append([{hit.iri for hit in index.search("default", "facts", vector, 5)} for vector in vectors])
    index.shortlist_rows = SHORTLIST_ROWS
    return 100 * statistics.mean(len(a & b) / len(b) for a, b in zip(*found))


async def latency(
    directory: Path, queries_file: Path, root: Path, wanted: list[str], scorers: list[str]
) -> dict[str, dict[str, float]]:
    questions = [re.sub(r"[\[\]]", "", q["question"]) for q in read_jsonl(queries_file)[:100]]
    out = {}
    for name, (limit, copies) in LATENCY_SIZES.items():
        if name not in wanted:
            continue
        services, store, loading = await latency_graph(
            root / name, partial(metaqa_quads, directory / "kb.txt", limit, copies)
        )
        print(
            f"latency, {name}: {loading['triples']} triples loaded in {loading['load_s']:.0f} s, indexed in "
            f"{loading['index_s']:.0f} s; timing {len(questions)} questions",
            file=sys.stderr,
            flush=True,
        )
        await services.graph_rag.retrieve(IRIS, questions[0], mode="graph")  # builds the search matrix once
        for scorer in scorers:
            times: list[float] = []
            stages: dict[str, list[float]] = {}
            for question in questions:
                started = time.perf_counter()
                options = GraphRagOptions(scorer=scorer)
                walk = await services.graph_rag.retrieve(IRIS, question, options, mode=DEFAULT_MODE)
                times.append(1000 * (time.perf_counter() - started))
                for stage, ms in walk.trace.steps.items():
                    stages.setdefault(stage, []).append(ms)
            row = {"triples": loading["triples"], "p50_ms": percentile(times, 0.5), "p95_ms": percentile(times, 0.95)}
            out[f"{name}, {scorer} scorer"] = row | {
                f"{stage} p50_ms": statistics.median(ms) for stage, ms in stages.items()
            }
        if services.vectors.count("default", "facts") >= SHORTLIST_ROWS:
            out[f"{name}, facts scorer"]["shortlist recall@5"] = shortlist_recall(services, questions)
        print(
            json.dumps({key: row for key, row in out.items() if key.startswith(f"{name},")}),
            file=sys.stderr,
            flush=True,
        )
        services.close()
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, nargs="+", default=[SHARED / "2wiki101", SHARED / "musique100"])
    parser.add_argument("--skip-passages", action="store_true", help="run only the MetaQA / latency parts")
    parser.add_argument("--metaqa", type=Path, default=SHARED / "metaqa", help="a folder with kb.txt and queries.jsonl")
    parser.add_argument("--metaqa-queries", type=Path, help="MetaQA questions (default: the folder's queries.jsonl)")
    parser.add_argument("--skip-metaqa", action="store_true")
    parser.add_argument("--latency", action="store_true", help="Graph RAG latency on 10k / 170k / 1M triples")
    parser.add_argument("--latency-sizes", nargs="+", choices=list(LATENCY_SIZES), default=list(LATENCY_SIZES))
    parser.add_argument("--latency-scorers", nargs="+", choices=["facts", "text"], default=["facts", "text"])
    parser.add_argument(
        "--latency-dir", type=Path, help="keep the latency graphs here and reuse them (1M takes ~1 h to index)"
    )
    parser.add_argument(
        "--scorer", choices=["facts", "text"], default="facts", help="Graph RAG's edge scorer (default: facts)"
    )
    parser.add_argument(
        "--no-resolution", action="store_true", help="ingest the passage sets with entity_resolution off"
    )
    parser.add_argument("--markdown", action="store_true", help="append the tables to bench/RESULTS.md")
    args = parser.parse_args()
    options = GraphRagOptions(scorer=args.scorer)
    variant = (f", {args.scorer} scorer" if args.scorer != "facts" else "") + (
        ", entity resolution off" if args.no_resolution else ""
    )
    report: dict[str, object] = {}
    lines: list[str] = []
    for dataset in [] if args.skip_passages else args.dataset:
        if not (dataset / "corpus.jsonl").is_file() or not (dataset / "queries.jsonl").is_file():
            raise SystemExit(f"{dataset} needs corpus.jsonl and queries.jsonl")
        with tempfile.TemporaryDirectory(prefix="retrieval-bench-") as work:
            metrics, ingest = asyncio.run(evaluate(dataset, Path(work), options, not args.no_resolution))
        report[dataset.name] = {"passages": metrics, "ingest": ingest}
        section = passage_table(dataset.name, metrics, ingest, variant)
        if "answers" in ingest:
            section += answer_table(dataset.name, ingest["answers"])  # type: ignore[arg-type]
        lines += section
        print("\n".join(section), file=sys.stderr)  # progress, in case a later part fails
    queries_file = args.metaqa_queries or args.metaqa / "queries.jsonl"
    if not args.skip_metaqa:
        with tempfile.TemporaryDirectory(prefix="metaqa-bench-") as work:
            table, loading = asyncio.run(metaqa(args.metaqa, queries_file, Path(work), options))
        report["metaqa"] = {"per_hop": table, "loading": loading}
        print(json.dumps(report["metaqa"]), file=sys.stderr)
        lines += [
            f"\n### MetaQA: Graph RAG{variant} on the KB ({loading['triples']} triples, {loading['entity_vectors']} "
            f"entity "
            f"vectors; load {loading['load_s']:.0f} s, index {loading['index_s']:.0f} s)\n",
            "| hops | questions | grounding@1 | grounding | answer recall | Hits@1 | default answer contains | "
            "median chars |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for hops, row in table.items():
            lines.append(
                f"| {hops} | {row['questions']:.0f} | {row['grounding@1']:.1f} | {row['grounding']:.1f} | "
                f"{row['answer_recall']:.1f} | {row['hits@1']:.1f} | {row['contains']:.1f} | "
                f"{row['median_answer_chars']:.0f} |"
            )
    if args.latency:
        if args.latency_dir:
            timings = asyncio.run(
                latency(args.metaqa, queries_file, args.latency_dir, args.latency_sizes, args.latency_scorers)
            )
        else:
            with tempfile.TemporaryDirectory(prefix="latency-bench-") as work:
                timings = asyncio.run(
                    latency(args.metaqa, queries_file, Path(work), args.latency_sizes, args.latency_scorers)
                )
        report["latency"] = timings
        stages = [key for key in next(iter(timings.values())) if key.endswith(" p50_ms") and key != "p50_ms"]
        lines += [
            "\n### Graph RAG latency, retrieval stages without LLM (MetaQA graph, 100 questions)\n",
            "| graph | triples | p50 ms | p95 ms | "
            + " | ".join(s.removesuffix(" p50_ms") + " p50" for s in stages)
            + " |",
            "|---" * (3 + len(stages)) + "|---|",
        ]
        for name, row in timings.items():
            lines.append(
                f"| {name} | {row['triples']:.0f} | {row['p50_ms']:.0f} | {row['p95_ms']:.0f} | "
                + " | ".join(f"{row.get(s, 0):.0f}" for s in stages)
                + " |"
            )
        lines += [
            f"\n{name}: the float16 shortlist finds {row['shortlist recall@5']:.1f}% of the 5 nearest facts an exact "
            "search finds, for the same questions."
            for name, row in timings.items()
            if "shortlist recall@5" in row
        ]
    publish("retrieval.py", "\n".join(lines), report, args.markdown)


if __name__ == "__main__":
    main()
