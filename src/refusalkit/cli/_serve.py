"""CLI verbs of this part (being written)."""

from __future__ import annotations

from refusalkit.cli._app import app

__all__ = ["app"]
