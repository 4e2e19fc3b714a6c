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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
