"""A tool's result, checked before a model reads it: one implementation for the MCP gateway and
the framework integrations (docs/design/mcp.md, Results; docs/integrations.md, Tool results).

Every text of a result passes the scanner (``refusalkit.chat.redact`` with the journal's redaction
key, handed in as ``Scanner`` so this layer imports no detector): each credential or piece of
personal data found is replaced by a typed placeholder, ``[<kind> <keyed token>]``, and the rest
is left as it was. The pack's result filters (``Hits``) run over the same texts, before
redaction; a match taints the session (``SessionTaint``), which later requests carry as
``context.session``. A result with findings or a filter match is journaled as a
``refusalkit.mcp-result/v1`` record (``result_record``): the call's decision id and journal
index, the kinds, where and the keyed tokens, never a value. Under ``block`` the result is
replaced by the refusal ``withheld`` builds.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    format_timestamp,
    now_utc,
    uuid7,
)

__all__ = [
    "RESULT_SCHEMA",
    "Checked",
    "Found",
    "Hits",
    "ResultFinding",
    "ResultMode",
    "ResultWalker",
    "Scanner",
    "SessionTaint",
    "check_value",
    "placeholder",
    "record_fields",
    "result_action",
    "result_record",
    "withheld",
]

RESULT_SCHEMA = "refusalkit.mcp-result/v1"
"""The journal record of a result that had findings or matched a result filter."""

_MAX_DEPTH = 64  # deeper structured content is replaced whole (fail closed)
_RESULT_TEST = "the result holds no credential or personal data"
_RESULT_MESSAGE = "The tool's result held {kinds}; it was withheld."


class Found(Protocol):
    """One finding of the scanner (``refusalkit.chat.ScanFinding``): kind, span, keyed token."""

    @property
    def kind(self) -> str: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def token(self) -> str: ...


Scanner = Callable[[str], tuple[str, Sequence[Found]]]
"""``text -> (text with each finding replaced by its token, the findings)`` (``chat.redact``)."""

Hits = Callable[[str], tuple[str, ...]]
"""The ids of the result filters a text matches (``Pack.result_filter_hits``)."""


class ResultMode(enum.StrEnum):
    """What is done with a result that holds secrets or personal data (``--results``)."""

    REDACT = "redact"
    BLOCK = "block"
    OFF = "off"


@dataclass(frozen=True, slots=True)
class ResultFinding:
    """One finding in a result: where (a JSON Pointer into the result), its kind, its token."""

    where: str
    kind: str
    token: str

    def to_dict(self) -> dict[str, str]:
        """Wire form; never the value."""
        return {"where": self.where, "kind": self.kind, "token": self.token}


@dataclass(frozen=True, slots=True)
class Checked:
    """A result as the model may see it, what was found in it, and the filters that matched."""

    result: Any
    findings: tuple[ResultFinding, ...]
    taint: tuple[str, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds found, each once, in order of first finding."""
        return tuple(dict.fromkeys(f.kind for f in self.findings))


def placeholder(finding: Found) -> str:
    """The typed placeholder of a finding: ``[secret:aws_access_key_id <redacted:...>]``."""
    return f"[{finding.kind} {finding.token}]"


def _typed(redacted: str, findings: Sequence[Found]) -> str:
    """The scanner's output with each token made a typed placeholder (spans are in order)."""
    out, cursor, shift = [], 0, 0
    for f in findings:
        at = f.start + shift
        out += [redacted[cursor:at], placeholder(f)]
        cursor = at + len(f.token)
        shift += len(f.token) - (f.end - f.start)
    out.append(redacted[cursor:])
    return "".join(out)


def escape(key: str) -> str:
    """A JSON Pointer reference token (RFC 6901 §3)."""
    return str(key).replace("~", "~0").replace("/", "~1")


class ResultWalker:
    """Visits the texts of one result; ``scan`` off leaves them as they are (filters still run)."""

    def __init__(self, scanner: Scanner, hits: Hits, *, scan: bool) -> None:
        self.scanner, self.hits, self.scan = scanner, hits, scan
        self.findings: list[ResultFinding] = []
        self.taint: dict[str, None] = {}

    def text(self, where: str, text: str) -> str:
        """One text: filters first, then the scanner."""
        for hit in self.hits(text):
            self.taint[hit] = None
        if not self.scan:
            return text
        redacted, found = self.scanner(text)
        if not found:
            return text
        self.findings += [ResultFinding(where, f.kind, f.token) for f in found]
        return _typed(redacted, found)

    def value(self, where: str, value: Any, depth: int = 0) -> Any:
        """A JSON value: every string in it (object keys are kept), to ``_MAX_DEPTH`` deep."""
        if isinstance(value, str):
            return self.text(where, value)
        if depth > _MAX_DEPTH:
            return self.text(where, "(structured content nested too deep to check)")
        if isinstance(value, dict):
            return {k: self.value(f"{where}/{escape(k)}", v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(f"{where}/{i}", v, depth + 1) for i, v in enumerate(value)]
        return value

    def checked(self, result: Any) -> Checked:
        """The outcome of the walk, around the result as the model may see it."""
        return Checked(result, tuple(self.findings), tuple(self.taint))


def check_value(value: Any, scanner: Scanner, hits: Hits, *, scan: bool = True) -> Checked:
    """Check a framework tool's output (a string, or JSON-like lists and objects of strings)."""
    walker = ResultWalker(scanner, hits, scan=scan)
    return walker.checked(walker.value("", value))


class SessionTaint:
    """The result filters that matched, per session: what ``context.session`` says.

    ``context(session)`` is the request member rules read as ``context.session.tainted`` (true
    once any result filter matched in the session) and ``context.session.taint`` (their ids).
    """

    __slots__ = ("_taint",)

    def __init__(self) -> None:
        self._taint: dict[str | None, dict[str, None]] = {}

    def of(self, session: str | None) -> tuple[str, ...]:
        """The result filters that matched in ``session`` so far, in order."""
        return tuple(self._taint.get(session, ()))

    def add(self, session: str | None, filters: Sequence[str]) -> None:
        """Record the filters one result matched."""
        if filters:
            self._taint.setdefault(session, {}).update(dict.fromkeys(filters))

    def context(self, session: str | None) -> dict[str, Any]:
        """The request's ``context`` member for ``session``."""
        taint = self.of(session)
        return {"session": {"tainted": bool(taint), "taint": list(taint)}}

    def end(self, session: str | None) -> None:
        """Forget a session that ended."""
        self._taint.pop(session, None)


def result_action(mode: ResultMode, checked: Checked, *, shadow: bool = False) -> str:
    """What is done with a checked result: ``block`` (withheld), ``redact`` or ``pass``."""
    found = bool(checked.findings) and not shadow
    if found and mode is ResultMode.BLOCK:
        return "block"
    return "redact" if found else "pass"


def result_record(
    *,
    method: str,
    tool: str,
    call: Decision,
    journal_index: int | None,
    checked: Checked,
    subject: Subject,
    action: str,
) -> dict[str, Any]:
    """The ``refusalkit.mcp-result/v1`` record of one result: never a value."""
    who = {"session": subject.session}
    if subject.agent is not None:
        who["agent"] = subject.agent
    return {
        "schema": RESULT_SCHEMA,
        "result_id": uuid7(),
        "at": format_timestamp(now_utc()),
        "action": action,
        "method": method,
        "tool": tool,
        "decision_id": call.decision_id,
        "journal_index": journal_index,
        "subject": who,
        "kinds": list(checked.kinds),
        "findings": [f.to_dict() for f in checked.findings],
        "taint": list(checked.taint),
    }


def record_fields(record: Mapping[str, Any]) -> tuple[str | None, ...]:
    """The journal's index columns of a result record (as ``index_fields`` reads them back)."""
    subject = record["subject"]
    return (
        record["schema"], record["action"], None, None,
        subject.get("agent"), subject["session"], record["at"],
    )  # fmt: skip


def withheld(
    checked: Checked, *, policy: PolicyRef, engine: EngineRef, subject: Subject, digest: str
) -> Decision:
    """The refusal that replaces a result with findings under ``block`` (rule ``@results``)."""
    kinds = ", ".join(checked.kinds)
    step = WhyStep("@results", "deny", matched=True, decisive=True, test=_RESULT_TEST,
                   detail=f"found: {kinds}")  # fmt: skip
    return Decision(
        uuid7(), Action.DENY, ReasonCode.POLICY_DENIED, "@results",
        _RESULT_MESSAGE.format(kinds=kinds), (step,), policy, engine, subject, digest,
        format_timestamp(now_utc()),
    )  # fmt: skip
