"""Deprecation aliases: a public name that moved keeps working, with a ``DeprecationWarning``.

A package whose name moved sets ``__getattr__ = moved(__name__, {name: (module, attribute)})``
(PEP 562); CHANGELOG.md lists each such name under **Deprecated** with the release that removes it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["REMOVED_IN", "moved"]

REMOVED_IN = "0.3"


def moved(package: str, names: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that resolves each moved name, warning once per access."""

    def resolve(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = names[name]
        instead = "no public replacement" if "._" in module else f"use {module}.{attribute}"
        warnings.warn(
            f"{package}.{name} is deprecated and will be removed in {REMOVED_IN} ({instead})",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(module), attribute)

    return resolve
