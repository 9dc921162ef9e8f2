"""The MCP gateway stands on the journal and the decision point, never on the HTTP service.

``pip install 'refusalkit[mcp]'`` must install no web framework: the requirement set of the
``mcp`` extra, read from the installed package metadata (PEP 508 markers with ``extra``) and
followed through every installed dependency's own metadata, holds no FastAPI, Prometheus client
or Jinja2; and importing ``refusalkit.mcp_proxy`` imports neither ``refusalkit.server`` nor any of
them (docs/design/architecture.md).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import refusalkit

WEB_STACK = {"fastapi", "prometheus-client", "jinja2"}
PYPROJECT = Path(refusalkit.__file__).resolve().parents[2] / "pyproject.toml"


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    if requirement.marker is None:
        return True
    environment = dict(default_environment())
    return any(requirement.marker.evaluate({**environment, "extra": e}) for e in extras or {""})


def requirement_closure(name: str, extras: set[str]) -> set[str]:
    """Every distribution ``pip install name[extras]`` brings, from the installed metadata."""
    seen: set[str] = set()
    todo = [(name, extras)]
    while todo:
        current, wanted = todo.pop()
        try:
            requires = distribution(current).requires or []
        except PackageNotFoundError:  # an optional dependency's own optional dependency
            continue
        for line in requires:
            requirement = Requirement(line)
            if not _applies(requirement, wanted):
                continue
            key = canonicalize_name(requirement.name)
            if key == "refusalkit":  # a self-reference such as refusalkit[server]
                todo.append(("refusalkit", set(requirement.extras)))
            elif key not in seen:
                seen.add(key)
                todo.append((key, set(requirement.extras)))
    return seen


def test_the_installed_metadata_is_the_checkouts() -> None:
    """The closure below reads the installed metadata: it must say what pyproject.toml says."""
    declared = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    wanted = {str(Requirement(r)) for r in declared["project"]["optional-dependencies"]["mcp"]}
    installed = {
        str(Requirement(line.split(";")[0]))
        for line in distribution("refusalkit").requires or []
        if _applies(Requirement(line), {"mcp"}) and "extra" in line
    }
    assert installed == wanted, (
        "the installed refusalkit metadata is stale: run "
        "`pip install --no-deps --no-build-isolation -e .`"
    )


def test_the_mcp_extra_brings_no_web_framework() -> None:
    closure = requirement_closure("refusalkit", {"mcp"})
    assert "mcp" in closure
    assert closure & WEB_STACK == set()


def test_the_server_extra_does_bring_them() -> None:
    """The walk above can find them: the ``server`` extra's closure holds all three."""
    assert requirement_closure("refusalkit", {"server"}) >= WEB_STACK


def test_importing_the_gateway_imports_no_service() -> None:
    probe = (
        "import sys, refusalkit.mcp_proxy, refusalkit.cli\n"
        "bad = {'fastapi', 'prometheus_client', 'jinja2'}\n"
        "print(sorted(m for m in sys.modules\n"
        "             if m.split('.')[0] in bad or m.startswith('refusalkit.server')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
