"""Enforcers: what the framework integrations ask before a tool runs (docs/design/client.md).

``enforcer(policy=PATH, journal=STORE, keyring=PATH)`` gives a local one; ``refusalkit.client
.Client`` is the remote one. Both satisfy ``Enforcer``: ``decide`` never raises, and any failure
is ``deny`` + ``unavailable`` (``fail_closed``), never an allow.
"""

from refusalkit.enforce._enforcer import (
    Enforcer,
    JournalWriter,
    LocalEnforcer,
    ToolBlockedError,
    enforcer,
)
from refusalkit.enforce._failclosed import fail_closed
from refusalkit.enforce._group import GroupJournal
from refusalkit.enforce._results import ResultChecker, ResultMode

__all__ = [
    "Enforcer",
    "GroupJournal",
    "JournalWriter",
    "LocalEnforcer",
    "ResultChecker",
    "ResultMode",
    "ToolBlockedError",
    "enforcer",
    "fail_closed",
]
