"""docs/architecture.md stays true to the code: every file it cites exists, and every dotted
name it cites (`extraction.pipeline.Pipeline`, `walk.Grounding`) imports."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = {
    "store",
    "models",
    "library",
    "ontology",
    "retrieval",
    "extraction",
    "queries",
    "operations",
    "server",
    "cli",
}
CITED = re.compile(r"`([^`\s]+)`")


def cited() -> list[str]:
    return CITED.findall(PAGE.read_text())


def _file_exists(name: str) -> bool:
    """A path from the repository or the package; a bare file name (a package's row names its
    modules so) anywhere in the package."""
    if "/" not in name:
        return any((ROOT / "sparqlrag").rglob(name))
    return any((base / name).exists() for base in (ROOT, ROOT / "sparqlrag"))


def _resolves(dotted: str) -> bool:
    """`package.module[.Name...]`, or `module.Name` of a module cited alone elsewhere on the page."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        for prefix in ("sparqlrag.", "sparqlrag.retrieval.", "sparqlrag.store."):
            try:
                found: object = importlib.import_module(prefix + ".".join(parts[:cut]))
            except ImportError:
                continue
            for attribute in parts[cut:]:
                if not hasattr(found, attribute):
                    return False
                found = getattr(found, attribute)
            return True
    return False


def test_every_cited_file_exists() -> None:
    files = [name for name in cited() if re.fullmatch(r"[\w./-]+\.(py|ttl|toml|md)", name)]
    assert len(files) > 20
    assert [name for name in files if not _file_exists(name)] == []


def test_every_cited_module_and_name_imports() -> None:
    dotted = [
        name
        for name in cited()
        if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+", name)
        and not name.endswith(".py")
        and (name.split(".")[0] in PACKAGES or name.split(".")[0] in {"walk", "base", "vocab", "services"})
    ]
    assert len(dotted) > 10
    assert [name for name in dotted if not _resolves(name)] == []


def test_the_check_sees_a_name_that_is_gone() -> None:
    assert _resolves("extraction.pipeline.Pipeline") and not _resolves("extraction.pipeline.Gone")
    assert _file_exists("retrieval/trace_json.py") and not _file_exists("retrieval/gone.py")
