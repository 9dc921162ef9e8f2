"""Tool results as the model may see them: scanned, filtered, journaled (docs/integrations.md).

The framework integrations hand each tool's output here after the tool ran. It takes the one
path the MCP gateway's results take (``refusalkit._internal.results``): every string passes the
chat guard's scanner (``refusalkit.chat.redact``, keyed by the journal's redaction key), each
finding becomes a typed placeholder ``[<kind> <keyed token>]``; the pack's ``result_filters``
run over the same strings and a match taints the session, which the next requests of the
session carry as ``context.session`` (``context(session)``). A result with findings or a match
is journaled as a ``refusalkit.mcp-result/v1`` record: the call's decision id and journal
index, the kinds, where and the keyed tokens, never a value. Under ``block`` the result is
replaced by a journaled ``deny`` by ``@results``; under ``off`` only the filters run.

Fail closed: a result that cannot be checked or journaled is withheld (``deny`` +
``unavailable``), never passed on.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from refusalkit._internal.failclosed import failed_decision, safe_digest
from refusalkit._internal.results import (
    Checked,
    Hits,
    ResultMode,
    SessionTaint,
    check_value,
    record_fields,
    result_action,
    result_record,
    withheld,
)
from refusalkit._version import __version__
from refusalkit.chat import ScanFinding, redact
from refusalkit.decide import DecisionEncoder
from refusalkit.journal import decision_fields
from refusalkit.keyring import Keyring
from refusalkit.model import Decision, EngineRef, canonical_json
from refusalkit.redact import Redactor

__all__ = ["ResultChecker", "ResultMode"]

log = logging.getLogger("refusalkit.enforce")

Append = Callable[[Sequence[tuple[bytes, tuple[str | None, ...]]]], list[int]]
_REMEMBERED = 4096  # journal indices of the most recent decisions, for their results' records
_FAILED = "The tool's result could not be checked or journaled; it was withheld."


class ResultChecker:
    """Checks tool results for one enforcer's sessions (see the module docstring).

    ``append`` journals encoded entries and gives their indices (``None``: nothing is
    journaled, as for a remote enforcer's results, whose pack and journal live in the service).
    Thread-safe.
    """

    __slots__ = ("_append", "_encoder", "_hits", "_indices", "_lock", "_redactor",
                 "taint")  # fmt: skip

    def __init__(
        self,
        redactor: Redactor,
        hits: Hits,
        append: Append | None = None,
    ) -> None:
        self._redactor, self._hits, self._append = redactor, hits, append
        self._encoder = DecisionEncoder()
        self._indices: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self.taint = SessionTaint()

    @classmethod
    def unjournaled(cls) -> ResultChecker:
        """For an enforcer that gives no pack or journal here (the service's ``Client``): results
        are redacted with a key of this process only, and neither filtered nor journaled."""
        return cls(Keyring.generate().redactor(), _no_filters)

    def remember(self, decision: Decision, index: int | None) -> None:
        """The journal index a call's decision was appended at (named by its result's record)."""
        if index is None:
            return
        with self._lock:
            self._indices[decision.decision_id] = index
            while len(self._indices) > _REMEMBERED:
                self._indices.popitem(last=False)

    def context(self, session: str | None) -> dict[str, Any]:
        """The request's ``context`` for ``session``: ``{"session": {"tainted", "taint"}}``."""
        with self._lock:
            return self.taint.context(session)

    def _scan(self, text: str) -> tuple[str, tuple[ScanFinding, ...]]:
        return redact(text, self._redactor)

    def check(
        self, tool: str, call: Decision, output: Any, mode: ResultMode = ResultMode.REDACT
    ) -> tuple[Any, Decision | None]:
        """The output the model may see, or the refusal that replaces it. Never raises."""
        try:
            checked = check_value(output, self._scan, self._hits, scan=mode is not ResultMode.OFF)
            with self._lock:
                self.taint.add(call.subject.session, checked.taint)
            if not checked.findings and not checked.taint:
                return output, None
            return self._journaled(tool, call, checked, mode)
        except Exception as exc:  # noqa: BLE001 (fail closed: nothing unchecked is passed on)
            log.warning("a tool result was withheld: %s", type(exc).__name__)
            return None, self._failed(call, f"the result check failed ({type(exc).__name__})")

    def _journaled(
        self, tool: str, call: Decision, checked: Checked, mode: ResultMode
    ) -> tuple[Any, Decision | None]:
        action = result_action(mode, checked)
        with self._lock:
            index = self._indices.get(call.decision_id)
        record = result_record(method="tools/call", tool=tool, call=call, journal_index=index,
                               checked=checked, subject=call.subject, action=action)  # fmt: skip
        entries = [(canonical_json(record), record_fields(record))]
        refusal = None
        if action == "block":
            digest = safe_digest(self._redactor.digest, tool)
            refusal = withheld(checked, policy=call.policy, engine=_ENGINE,
                               subject=call.subject, digest=digest)  # fmt: skip
            entries.append((self._encoder.encode(refusal), decision_fields(refusal)))
        if self._append is not None:
            self._append(entries)
        return (None, refusal) if refusal is not None else (checked.result, None)

    def _failed(self, call: Decision, problem: str) -> Decision:
        return failed_decision(
            test="the tool's result was checked and journaled",
            problem=problem,
            message=_FAILED,
            policy=call.policy,
            engine=_ENGINE,
            subject=call.subject,
            request_digest=call.request_digest,
        )


_ENGINE = EngineRef("refusalkit", __version__)


def _no_filters(text: str) -> tuple[str, ...]:  # noqa: ARG001 (the ``Hits`` signature)
    return ()
