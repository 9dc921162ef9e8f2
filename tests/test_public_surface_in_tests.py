"""Tests go through the public surface where they can (CONTRIBUTING.md, Tests).

A test may import an internal module for what only it holds (a speed twin, a parser below the
layer that hides its edge cases, a writer's turn); a name the package exports is imported from
the package, so the test exercises what users import and a rename inside the package does not
break it.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def internal_owner(module: str) -> str | None:
    """The package holding an internal module (``refusalkit.journal._tree`` -> journal); None
    for a public module and for the root's shared internals, which have no public face."""
    parts = module.split(".")
    if parts[0] != "refusalkit":
        return None
    first = next((i for i, part in enumerate(parts) if i and part.startswith("_")), None)
    return None if first is None or first == 1 else ".".join(parts[:first])


def exported_from_internals(path: Path) -> list[str]:
    """``module.name`` for each name the file imports from an internal module although the
    module's package exports the same object."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        owner = internal_owner(node.module)
        if owner is None:
            continue
        package, module = importlib.import_module(owner), importlib.import_module(node.module)
        public = set(getattr(package, "__all__", ()))
        found += [
            f"{node.module}.{alias.name}"
            for alias in node.names
            if alias.name in public and getattr(module, alias.name) is getattr(package, alias.name)
        ]
    return found


def test_the_owner_rule_itself() -> None:
    assert internal_owner("refusalkit.journal._tree") == "refusalkit.journal"
    assert internal_owner("refusalkit.journal") is None
    assert internal_owner("refusalkit._internal.records") is None
    assert internal_owner("mcp.types") is None


def test_a_public_name_is_imported_from_its_package() -> None:
    found = {
        str(path.relative_to(TESTS)): names
        for path in sorted(TESTS.rglob("*.py"))
        if "vectors" not in path.parts and (names := exported_from_internals(path))
    }
    assert found == {}, "import these from the package (its __all__), not its internal module"
