"""The bundled examples: a policy pack, requests, their expected decisions, and more per part.

``examples/`` at the top of the repository is a link to this folder, so the same files serve a
checkout and an installed package.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLES_DIR", "example_path"]

EXAMPLES_DIR = Path(__file__).resolve().parent


def example_path(name: str) -> Path:
    """The path of a bundled example file, e.g. ``example_path("agent-tools.yaml")``."""
    path = EXAMPLES_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"no bundled example named {name!r} in {EXAMPLES_DIR}")
    return path
