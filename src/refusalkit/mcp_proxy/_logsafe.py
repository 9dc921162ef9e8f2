"""Log lines about malformed messages name their kind, never their bytes (docs/design/mcp.md).

The SDK's transports log a message they cannot parse with its traceback (``logger.exception``),
and a validation error's text quotes the input: an argument's value, a secret in a server's
result. ``quiet_sdk_parse_errors`` puts a filter on those loggers that keeps the line and replaces
the traceback by the error's kind (its type and, for a validation error, the locations and kinds
of its problems).
"""

from __future__ import annotations

import logging

from refusalkit.mcp_proxy._bridge import describe_malformed

__all__ = ["SDK_LOGGERS", "quiet_sdk_parse_errors"]

SDK_LOGGERS = ("mcp.client.stdio", "mcp.client.streamable_http", "mcp.server.streamable_http")


class _KindOnly(logging.Filter):
    """Drops a record's traceback for the kind of its error (``ValueError`` and subclasses)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ValueError):
            record.msg = f"{record.getMessage()}: {describe_malformed(error)}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


_FILTER = _KindOnly()


def quiet_sdk_parse_errors() -> None:
    """Install the filter on the SDK's transport loggers (once; idempotent)."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
