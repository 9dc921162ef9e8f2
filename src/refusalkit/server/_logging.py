"""Log setup of ``refusalkit serve``: the ``refusalkit`` loggers write to stderr like uvicorn's.

Only redacted forms reach these loggers (decision ids, codes, rules, digests): never a request.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_logging"]


def configure_logging(level: int = logging.INFO) -> None:
    """Give the ``refusalkit`` logger one stderr handler (idempotent)."""
    logger = logging.getLogger("refusalkit")
    if any(getattr(h, "_refusalkit", False) for h in logger.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)-9s %(name)s: %(message)s"))
    handler._refusalkit = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
