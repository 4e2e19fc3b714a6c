"""The package layering of docs/architecture.md, checked from the imports the code really has.

A package may import only the packages listed for it; the map has no cycle, so no two
packages import each other. A new arrow is a design decision: change the map and the page.
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "sparqlrag"

DOMAIN = {"extraction", "retrieval", "queries", "library", "ontology", "models", "store", "config", "threads"}
# the adapters (HTTP, MCP, CLI) reach the domain through operations/ alone: the storage and configuration they serve
ADAPTED = {"store", "config", "threads"}
ALLOWED: dict[str, set[str]] = {
    "threads": set(),
    "config": set(),
    "store": set(),
    "models": set(),
    "library": {"store", "threads"},
    "ontology": {"models", "store", "threads"},
    "retrieval": {"models", "store", "threads"},
    "extraction": {"library", "models", "store", "threads"},
    "queries": {"retrieval", "library", "ontology", "models", "store", "threads"},
    "services": DOMAIN - {"services"},
    "operations": DOMAIN | {"services"},
    "server": ADAPTED | {"operations", "services"},
    "cli": ADAPTED | {"server", "operations", "services"},
}


def imported_packages(path: Path) -> set[str]:
    """The sparqlrag packages (or top-level modules) a module imports, at any depth of its code."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != "sparqlrag" else [f"sparqlrag.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found |= {name.split(".")[1] for name in names if name.startswith("sparqlrag.")}
    return found


def package_of(path: Path) -> str:
    return path.relative_to(ROOT).with_suffix("").parts[0]


def test_the_map_has_no_cycle() -> None:
    try:
        TopologicalSorter(ALLOWED).prepare()
    except CycleError as error:
        pytest.fail(f"the allowed imports form a cycle: {error.args[1]}")


def test_every_package_is_in_the_map() -> None:
    packages = {package_of(path) for path in ROOT.rglob("*.py") if path.name != "__init__.py" or path.parent != ROOT}
    assert packages == set(ALLOWED)


def test_no_package_imports_one_above_it() -> None:
    wrong = []
    for path in sorted(ROOT.rglob("*.py")):
        if path.parent == ROOT and path.name == "__init__.py":
            continue
        package = package_of(path)
        for target in sorted(imported_packages(path) - {package, "__version__"}):
            if target not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT.parent)} imports sparqlrag.{target}")
    assert wrong == []


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from sparqlrag.server import app\n    import sparqlrag.store.vocab\n")
    assert imported_packages(module) == {"server", "store"}


MAX_LINES = 500  # past this a module holds more than one concept: split it where the concepts part


def test_no_module_is_over_the_line_limit() -> None:
    long = [
        f"{path.relative_to(ROOT.parent)}: {lines} lines"
        for path in sorted(ROOT.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_LINES
    ]
    assert long == []


# where a collection's name becomes its IRIs: the registry (every collection the store or the library
# names, and a knowledge core's), and the reader of IRIs back to their collections; everything else is
# handed an Iris (operations/collection.py makes one per request through the registry)
IRIS_MINTED_IN = {"library/collections.py", "queries/describe.py"}
IRIS_DEFINED_IN = "store/vocab.py"


def calls_named(path: Path, name: str) -> bool:
    """Whether the module calls `name(...)` (or `something.name(...)`) anywhere."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call):
            called = node.func
            if (isinstance(called, ast.Name) and called.id == name) or (
                isinstance(called, ast.Attribute) and called.attr == name
            ):
                return True
    return False


def test_a_collections_iris_are_built_in_few_modules() -> None:
    building = {
        path.relative_to(ROOT).as_posix()
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).as_posix() != IRIS_DEFINED_IN and calls_named(path, "Iris")
    }
    assert building == IRIS_MINTED_IN and len(building) <= 3


def test_the_iris_scan_sees_a_call(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from sparqlrag.store import vocab\n\ndef f(base):\n    return vocab.Iris(base, 'c')\n")
    assert calls_named(module, "Iris") and not calls_named(module, "Other")
