"""What a server answers, checked before the client sees it (docs/design/mcp.md, Results).

Every text a ``tools/call`` result carries (text content, an embedded resource's text, every
string of ``structuredContent``), every ``resources/read`` content (text, and a blob that is
UTF-8 text) and every ``prompts/get`` message passes the chat guard's scanner
(``refusalkit.chat.scan``): each credential or piece of personal data found is replaced by a
typed placeholder, ``[<kind> <keyed token>]``, and the rest is left as it was. The pack's result
filters run over the same texts, before redaction.

The walk, the placeholders, the findings and the taint are the framework integrations' too
(``refusalkit._internal.results``); this module knows only the shapes of MCP's results.
Pure: ``check_result`` takes the result, the redactor and the filters, and gives the result the
client may see, what was found where (kinds and tokens, never a value), and which filters matched.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from refusalkit._internal.results import (
    Checked,
    Hits,
    ResultFinding,
    ResultMode,
    ResultWalker,
    Scanner,
    escape,
    placeholder,
)
from refusalkit.chat import ScanFinding, redact
from refusalkit.redact import Redactor

__all__ = [
    "Checked",
    "Hits",
    "ResultFinding",
    "ResultMode",
    "check_result",
    "placeholder",
    "scanner",
]


def scanner(redactor: Redactor) -> Scanner:
    """The chat guard's scanner keyed by ``redactor`` (``refusalkit.chat.redact``), run once per
    distinct text: a result often carries one text twice (a tool's structured output is also its
    text content), and the scan is pure (its tokens are keyed digests), so the second is the
    first's outcome. Made per result, so what is remembered goes with it."""
    seen: dict[str, tuple[str, tuple[ScanFinding, ...]]] = {}

    def scan(text: str) -> tuple[str, tuple[ScanFinding, ...]]:
        found = seen.get(text)
        if found is None:
            found = seen[text] = redact(text, redactor)
        return found

    return scan


def _blob(walker: ResultWalker, where: str, blob: Any) -> Any:
    """A base64 blob that is UTF-8 text is checked as text (and re-encoded when redacted)."""
    if not isinstance(blob, str):
        return blob
    try:
        text = base64.b64decode(blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return blob  # binary data: no text to scan
    checked = walker.text(where, text)
    return blob if checked == text else base64.b64encode(checked.encode()).decode("ascii")


_BINARY = frozenset({"data"})  # image and audio content: base64 media, no text to scan
_KEPT = frozenset({"type", "mimeType"})  # what a block is; never a value


def _content(walker: ResultWalker, where: str, item: Any) -> Any:
    """One content block of a ``CallToolResult`` (text, image, audio, resource link, embedded
    resource) or a resource's contents entry of ``resources/read``: every string in it is checked
    (text, a link's name, description and URI, annotations), except media data and the block's
    type; a ``blob`` is checked when it is UTF-8 text."""
    if not isinstance(item, dict):
        return walker.value(where, item)
    out: dict[str, Any] = {}
    for key, value in item.items():
        here = f"{where}/{escape(key)}"
        if key in _BINARY or key in _KEPT:
            out[key] = value
        elif key == "blob":
            out[key] = _blob(walker, here, value)
        elif key == "resource":
            out[key] = _content(walker, here, value)
        else:
            out[key] = walker.value(here, value)
    return out


def _prompt(walker: ResultWalker, out: dict[str, Any]) -> Checked:
    """A ``GetPromptResult``: each message's content block is checked as a tool's would be."""
    messages = out.get("messages")
    if isinstance(messages, list):
        out["messages"] = [
            {**m, "content": _content(walker, f"/messages/{i}/content", m.get("content"))}
            if isinstance(m, dict) else m
            for i, m in enumerate(messages)
        ]  # fmt: skip
    return walker.checked(out)


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
    walker = ResultWalker(scanner(redactor), hits, scan=scan)
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
    return walker.checked(out)
