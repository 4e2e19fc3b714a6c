"""Where the benches find the shared datasets (../shared/data, beside the repository), and how they read them."""

from __future__ import annotations

import json
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def read_jsonl(path: Path) -> list[dict]:
    """One JSON object a line; blank lines skipped."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
