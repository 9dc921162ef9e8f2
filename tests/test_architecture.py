"""docs/design/architecture.md draws the packages and their import graph as they are.

The graph is computed from the source (every ``import refusalkit...`` and ``from refusalkit...``,
at module level or inside a function), package by package, and compared with the page's table:
a package that is not described, an import the table does not list, or one it lists that the
code no longer makes, fails here. The layers of the table must make every import go downwards.
The design index lists every page of docs/design/.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import refusalkit

SRC = Path(refusalkit.__file__).resolve().parent
DESIGN = SRC.parent.parent / "docs" / "design"
ROW = re.compile(r"^\|\s*`([\w.]+)`\s*\|\s*(\d+)\s*\|([^|]*)\|([^|]*)\|$")

Graph = dict[str, tuple[set[str], set[str]]]


def unit_of(path: Path) -> str:
    """The graph node of a source file: its package, or a top-level module's own name."""
    parts = path.relative_to(SRC).parts
    if len(parts) == 1:
        return "refusalkit" if parts[0] == "__init__.py" else parts[0].removesuffix(".py")
    return parts[0]


def imported_units(node: ast.AST) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        names = [node.module]
        if node.module == "refusalkit":  # from refusalkit import journal
            names = [f"refusalkit.{a.name}" for a in node.names]
    elif isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        return []
    found = []
    for name in names:
        parts = name.split(".")
        if parts[0] == "refusalkit":
            unit = parts[1] if len(parts) > 1 else "refusalkit"
            known = (SRC / unit).is_dir() or (SRC / f"{unit}.py").exists()
            found.append(unit if known else "refusalkit")  # a name of the facade
    return found


def source_graph() -> Graph:
    """``unit -> (imports at module level, imports only inside functions or for type checking)``."""
    eager: dict[str, set[str]] = defaultdict(set)
    lazy: dict[str, set[str]] = defaultdict(set)
    for path in sorted(SRC.rglob("*.py")):
        unit = unit_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}  # under ``if TYPE_CHECKING:`` counts as lazy
        for node in ast.walk(tree):
            for target in imported_units(node):
                if target != unit:
                    (eager if id(node) in top else lazy)[unit].add(target)
        eager.setdefault(unit, set())
    return {unit: (eager[unit], lazy[unit] - eager[unit]) for unit in eager}


def _names(cell: str) -> set[str]:
    return set(re.findall(r"`([\w.]+)`", cell))


def documented_graph() -> tuple[Graph, dict[str, int]]:
    page = (DESIGN / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Import graph", 1)[1].split("\n## ", 1)[0]
    graph: Graph = {}
    layers: dict[str, int] = {}
    for line in section.splitlines():
        match = ROW.match(line.strip())
        if match:
            unit, layer, eager, lazy = match.groups()
            graph[unit] = (_names(eager), _names(lazy))
            layers[unit] = int(layer)
    return graph, layers


def test_every_package_and_module_is_in_the_table() -> None:
    documented, _ = documented_graph()
    assert sorted(documented) == sorted(source_graph())


def test_the_table_is_the_import_graph_as_it_is() -> None:
    documented, _ = documented_graph()
    actual = source_graph()
    wrong = {
        unit: {"imports": sorted(eager), "lazily imports": sorted(lazy)}
        for unit, (eager, lazy) in actual.items()
        if documented.get(unit) != (eager, lazy)
    }
    assert wrong == {}, "update these rows of docs/design/architecture.md, Import graph"


def test_imports_go_downwards_only() -> None:
    documented, layers = documented_graph()
    upward = {
        (unit, target)
        for unit, (eager, lazy) in documented.items()
        for target in eager | lazy
        if layers[target] >= layers[unit]
    }
    assert upward == set()


def test_every_package_is_described_in_the_packages_table() -> None:
    page = (DESIGN / "architecture.md").read_text(encoding="utf-8")
    section = page.split("## Packages", 1)[1].split("\n## ", 1)[0]
    described = set(re.findall(r"^\| `(refusalkit[\w.]*)` \|", section, flags=re.MULTILINE))
    packages = {
        f"refusalkit.{p.name}"
        for p in SRC.iterdir()
        if (p / "__init__.py").exists() or (p.suffix == ".py" and not p.name.startswith("_"))
    }
    packages = {p.removesuffix(".py") for p in packages} | {"refusalkit"}
    assert packages <= described, sorted(packages - described)


def test_the_design_index_lists_every_page() -> None:
    index = (DESIGN / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    pages = {p.name for p in DESIGN.glob("*.md")} - {"README.md"}
    assert pages <= listed, sorted(pages - listed)
