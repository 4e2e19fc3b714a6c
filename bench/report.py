"""What every bench does at the end: print its table, append it to RESULTS.md on request, and
print the JSON figures as the last line."""

from __future__ import annotations

import json
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table's lines: the header, its rule, one line per row of formatted cells."""
    return [
        "| " + " | ".join(header) + " |",
        "|---" * len(header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def publish(title: str, table: str, figures: object | None, markdown: bool) -> None:
    print("\n" + table)
    if markdown:
        with RESULTS.open("a") as out:
            out.write(f"\n## {title}, {time.strftime('%Y-%m-%d %H:%M')}\n\n{table}\n")
    if figures is not None:
        print(json.dumps(figures))
