"""Retrieval quality and speed of Document RAG and Graph RAG.

    .venv/bin/python bench/retrieval.py [--dataset DIR ...] [--metaqa DIR] [--metaqa-queries FILE]
                                        [--latency [--latency-dir DIR]] [--skip-passages] [--scorer facts|text]
                                        [--no-resolution] [--markdown]

Passages (each --dataset DIR: `corpus.jsonl` {id,title,text}, `queries.jsonl` {id,question,
gold_ids}, optional `triples.jsonl` {passage_id,entities,triples}): every passage is ingested as
one document (title line + text), its knowledge from triples.jsonl when the folder has one,
else from the offline extractor. Each question then retrieves 8 passages per mode: keyword,
vector, hybrid (also at other fusion weights), graph (Graph RAG's ranked source passages) and
graph+document (both fused, what `ask --mode hybrid` answers from). recall@k = share of a
question's gold passages in the top k, averaged; all-gold@8 = share of questions with every
gold passage in the top 8; ms/query p50 and p95.

MetaQA (--metaqa DIR: `kb.txt` subject|relation|object, `queries.jsonl` {hops,question,
topic_entity,answers}): the KB is loaded as the knowledge graph (labels from the names) and
indexed; each question ([brackets] dropped) runs Graph RAG with its defaults (--scorer text:
the path-text edge scorer, one model run per candidate, for the graph modes above too). Per hop: grounding
(topic entity is the best seed / among the seeds), answer recall inside the selected edges, and
Hits@1 of the top-ranked entity (the best-scored entity of the selected edges, topic excluded).

Latency (--latency): the retrieval stages (no LLM) on the MetaQA graph cut to 10k triples, whole
(~170k with labels), and repeated with renamed relations to ~1M; p50 and p95 over the first 100
questions, with each edge scorer (facts, text); where the fact index is big enough to be searched
through its float16 shortlist, how many of the exact search's 5 nearest facts it finds.

The last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
