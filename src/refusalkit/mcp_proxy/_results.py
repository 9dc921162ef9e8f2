"""What a server answers, checked before the client sees it (docs/design/mcp.md, Results).

Every text a ``tools/call`` result carries (text content, an embedded resource's text, every
string of ``structuredContent``), every ``resources/read`` content (text, and a blob that is
UTF-8 text) and every ``prompts/get`` message passes the chat guard's scanner
(``refusalkit.chat.scan``): each credential or piece of personal data found is replaced by a
typed placeholder, ``[<kind> <keyed token>]``, and the rest is left as it was. The pack's result
filters run over the same texts, before redaction.

Pure: ``check_result`` takes the result, the redactor and the filters, and gives the result the
client may see, what was found where (kinds and tokens, never a value), and which filters matched.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from refusalkit.chat import ScanFinding, redact
from refusalkit.redact import Redactor

__all__ = ["Checked", "Hits", "ResultFinding", "ResultMode", "check_result", "placeholder"]

_MAX_DEPTH = 64  # deeper structured content is replaced whole (fail closed)
Hits = Callable[[str], tuple[str, ...]]
"""The ids of the result filters a text matches (``Pack.result_filter_hits``)."""


class ResultMode(enum.StrEnum):
    """``--results``: what the proxy does with a result that holds secrets or personal data."""

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
    """A result as the client may see it, what was found in it, and the filters that matched."""

    result: dict[str, Any]
    findings: tuple[ResultFinding, ...]
    taint: tuple[str, ...]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds found, each once, in order of first finding."""
        return tuple(dict.fromkeys(f.kind for f in self.findings))


def placeholder(finding: ScanFinding) -> str:
    """The typed placeholder of a finding: ``[secret:aws_access_key_id <redacted:...>]``."""
    return f"[{finding.kind} {finding.token}]"


def _typed(redacted: str, findings: Sequence[ScanFinding]) -> str:
    """``redact``'s output with each token made a typed placeholder (spans are in order)."""
    out, cursor, shift = [], 0, 0
    for f in findings:
        at = f.start + shift
        out += [redacted[cursor:at], placeholder(f)]
        cursor = at + len(f.token)
        shift += len(f.token) - (f.end - f.start)
    out.append(redacted[cursor:])
    return "".join(out)


class _Walker:
    """Visits the texts of one result; ``scan`` off leaves them as they are (filters still run)."""

    def __init__(self, redactor: Redactor, hits: Hits, *, scan: bool) -> None:
        self.redactor, self.hits, self.scan = redactor, hits, scan
        self.findings: list[ResultFinding] = []
        self.taint: dict[str, None] = {}

    def text(self, where: str, text: str) -> str:
        for hit in self.hits(text):
            self.taint[hit] = None
        if not self.scan:
            return text
        redacted, found = redact(text, self.redactor)
        if not found:
            return text
        self.findings += [ResultFinding(where, f.kind, f.token) for f in found]
        return _typed(redacted, found)

    def value(self, where: str, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            return self.text(where, value)
        if depth > _MAX_DEPTH:
            return self.text(where, "(structured content nested too deep to check)")
        if isinstance(value, dict):
            return {k: self.value(f"{where}/{_escape(k)}", v, depth + 1) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(f"{where}/{i}", v, depth + 1) for i, v in enumerate(value)]
        return value

    def blob(self, where: str, blob: Any) -> Any:
        """A base64 blob that is UTF-8 text is checked as text (and re-encoded when redacted)."""
        if not isinstance(blob, str):
            return blob
        try:
            text = base64.b64decode(blob, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return blob  # binary data: no text to scan
        checked = self.text(where, text)
        return blob if checked == text else base64.b64encode(checked.encode()).decode("ascii")


def _escape(key: str) -> str:
    """A JSON Pointer reference token (RFC 6901 §3)."""
    return str(key).replace("~", "~0").replace("/", "~1")


_BINARY = frozenset({"data"})  # image and audio content: base64 media, no text to scan
_KEPT = frozenset({"type", "mimeType"})  # what a block is; never a value


def _content(walker: _Walker, where: str, item: Any) -> Any:
    """One content block of a ``CallToolResult`` (text, image, audio, resource link, embedded
    resource) or a resource's contents entry of ``resources/read``: every string in it is checked
    (text, a link's name, description and URI, annotations), except media data and the block's
    type; a ``blob`` is checked when it is UTF-8 text."""
    if not isinstance(item, dict):
        return walker.value(where, item)
    out: dict[str, Any] = {}
    for key, value in item.items():
        here = f"{where}/{_escape(key)}"
        if key in _BINARY or key in _KEPT:
            out[key] = value
        elif key == "blob":
            out[key] = walker.blob(here, value)
        elif key == "resource":
            out[key] = _content(walker, here, value)
        else:
            out[key] = walker.value(here, value)
    return out


def _prompt(walker: _Walker, out: dict[str, Any]) -> Checked:
    """A ``GetPromptResult``: each message's content block is checked as a tool's would be."""
    messages = out.get("messages")
    if isinstance(messages, list):
        out["messages"] = [
            {**m, "content": _content(walker, f"/messages/{i}/content", m.get("content"))}
            if isinstance(m, dict) else m
            for i, m in enumerate(messages)
        ]  # fmt: skip
    return Checked(out, tuple(walker.findings), tuple(walker.taint))


def check_result(
    method: str,
    result: Mapping[str, Any],
    redactor: Redactor,
    hits: Hits,
    *,
    scan: bool = True,
) -> Checked:
    """Check one result of ``tools/call``, ``resources/read`` or ``prompts/get`` (MCP
    2025-11-25, Tools, Resources and Prompts): the result the client may see, the findings, and
    the result filters that matched.
    """
    walker = _Walker(redactor, hits, scan=scan)
    out = dict(result)
    if method == "prompts/get":
        return _prompt(walker, out)  # a prompt's own _meta is the server's, not for the model
    key = "contents" if method == "resources/read" else "content"
    items = result.get(key)
    if isinstance(items, list):
        out[key] = [_content(walker, f"/{key}/{i}", item) for i, item in enumerate(items)]
    if method == "tools/call" and "structuredContent" in result:
        out["structuredContent"] = walker.value("/structuredContent", result["structuredContent"])
    if "_meta" in result:
        out["_meta"] = walker.value("/_meta", result["_meta"])
    return Checked(out, tuple(walker.findings), tuple(walker.taint))
