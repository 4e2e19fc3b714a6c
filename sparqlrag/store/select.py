"""SELECT results as plain rows, for the system's own queries (values as strings)."""

from __future__ import annotations

import json
from typing import Any


def select(store: Any, sparql: str) -> list[dict[str, str]]:
    """Rows of a SELECT over the real dataset (no union default graph: our queries name graphs)."""
    result = store.query(sparql, accept="application/sparql-results+json")
    bindings = json.loads(result.body)["results"]["bindings"]
    return [{name: value["value"] for name, value in row.items()} for row in bindings]
