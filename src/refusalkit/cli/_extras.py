"""Which optional extra brings a missing module, read from the installed package's metadata.

A command whose optional dependency is absent (``refusalkit serve`` after a plain ``pip install
refusalkit``) must say which extra to install in one line, not end in a traceback. The extras are
read from the ``Requires-Dist`` metadata (PEP 508 ``extra == '...'`` markers), so an extra added to
``pyproject.toml`` is known here without a second list to keep in step.
"""

from __future__ import annotations

import importlib.metadata
import re

__all__ = ["extra_for"]

# Import names that differ from their distribution's name.
_DISTRIBUTION_OF = {
    "multipart": "python-multipart",
    "agent_os": "agent-governance-toolkit-core",
    "agents": "openai-agents",
    "re2": "google-re2",
    "yaml": "pyyaml",
}
# Extras that are for developing refusalkit itself, never the one to suggest.
_NOT_SUGGESTED = frozenset({"dev", "bench"})
_REQUIREMENT = re.compile(
    r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)[^;]*;.*extra\s*==\s*['\"]([^'\"]+)['\"]"
)


def _normalise(name: str) -> str:
    """PEP 503 normalised project name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def extra_for(module: str) -> str | None:
    """The user-facing extra that installs top-level ``module``, or None when none does."""
    top = module.partition(".")[0]
    wanted = _normalise(_DISTRIBUTION_OF.get(top, top))
    try:
        requirements = importlib.metadata.metadata("refusalkit").get_all("Requires-Dist") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match and match.group(2) not in _NOT_SUGGESTED and _normalise(match.group(1)) == wanted:
            return match.group(2)
    return None
