# ruff: noqa: FBT003 (WhyStep's booleans are positional, as in the decide package)
"""The decision document a Rego policy computes, in-process or on OPA (docs/design/engines.md).

::

    {"allow": true | false,
     "deny":  [{"rule": "no-etc", "reason_code": "policy-denied", "message": "...",
                "effect": "deny" | "block", "field": "args.path"}, ...],
     "audit": [{"rule": "...", "message": "...", "field": "..."}, ...]}

``allow`` is required; ``deny`` and ``audit`` default to empty; in an entry only ``rule`` is
required. Any deny entry refuses (a ``block`` entry first, else the first in document order);
else ``allow: true`` allows (``audit`` when there are audit entries); else ``@default`` denies.
A document that is undefined or not of this shape is no clean verdict: ``unavailable``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from refusalkit._internal.texts import MESSAGES
from refusalkit.engines._adapter import AdapterFailure
from refusalkit.engines._record import DEFAULT_MESSAGE, Outcome, Recorder
from refusalkit.model import Action, ReasonCode, WhyStep

__all__ = ["document_outcome"]

_ENTRY_KEYS = frozenset({"rule", "reason_code", "message", "effect", "field"})
_DENY_MESSAGE = MESSAGES["rule"]


def _entry(item: Any, where: str, scrub: Callable[[str], str]) -> dict[str, Any]:
    """One entry, checked; its ``rule`` and ``message`` without request values (``scrub``)."""
    if not isinstance(item, Mapping) or not isinstance(item.get("rule"), str) or not item["rule"]:
        raise AdapterFailure(f"decision document: every {where} entry needs a string `rule`")
    for key in ("reason_code", "message", "effect", "field"):
        if key in item and not isinstance(item[key], str):
            raise AdapterFailure(f"decision document: {where} `{key}` must be a string")
    entry = dict(item)
    entry["rule"] = scrub(entry["rule"])
    if "message" in entry:
        entry["message"] = scrub(entry["message"])
    return entry


def _entries(
    document: Mapping[str, Any], key: str, scrub: Callable[[str], str]
) -> list[dict[str, Any]]:
    items = document.get(key, [])
    if not isinstance(items, list):
        raise AdapterFailure(f"decision document: `{key}` must be an array")
    return [_entry(item, key, scrub) for item in items]


def _code(entry: Mapping[str, Any]) -> ReasonCode:
    try:
        return ReasonCode(entry.get("reason_code", ReasonCode.POLICY_DENIED.value))
    except ValueError as exc:
        raise AdapterFailure("decision document: a deny entry has an unknown reason_code") from exc


def _effect(entry: Mapping[str, Any]) -> str:
    effect = entry.get("effect", "deny")
    if effect not in ("deny", "block"):
        raise AdapterFailure('decision document: a deny entry\'s effect must be "deny" or "block"')
    return str(effect)


def document_outcome(
    document: Any, request: Mapping[str, Any], recorder: Recorder, engine: str
) -> Outcome:
    """The ``Outcome`` of a decision document; ``AdapterFailure`` when it is malformed."""
    if not isinstance(document, Mapping):
        raise AdapterFailure("decision document: not an object")
    allow = document.get("allow")
    if type(allow) is not bool:
        raise AdapterFailure("decision document: `allow` must be true or false")

    def scrub(text: str) -> str:
        return recorder.scrub(text, request)

    deny, audit = _entries(document, "deny", scrub), _entries(document, "audit", scrub)
    effects = [_effect(e) for e in deny]
    codes = [_code(e) for e in deny]
    first = min(range(len(deny)), key=lambda i: (effects[i] != "block", i), default=-1)
    steps = _steps(request, recorder, engine, deny, effects, audit, first, allow=allow)
    if deny:
        action = Action.BLOCK if effects[first] == "block" else Action.DENY
        message = deny[first].get("message") or _DENY_MESSAGE
        return Outcome(action, codes[first], deny[first]["rule"], message, steps)
    if not allow:
        return Outcome(Action.DENY, ReasonCode.POLICY_DENIED, "@default", DEFAULT_MESSAGE, steps)
    if audit:
        return Outcome(Action.AUDIT, None, audit[0]["rule"], audit[0].get("message"), steps)
    return Outcome(Action.ALLOW, None, "@allow", None, steps)


def _steps(  # noqa: PLR0917 (the parts of one document)
    request: Mapping[str, Any],
    recorder: Recorder,
    engine: str,
    deny: list[dict[str, Any]],
    effects: list[str],
    audit: list[dict[str, Any]],
    first: int,
    *,
    allow: bool,
) -> tuple[WhyStep, ...]:
    """One step per deny and audit entry, then ``@allow`` or ``@default`` when nothing denied."""
    steps = [
        recorder.step(
            request, e["rule"], effect, True, i == first, _field(e), f"{engine}: deny entry"
        )
        for i, (e, effect) in enumerate(zip(deny, effects, strict=True))
    ]
    audit_decides = allow and not deny
    steps.extend(
        recorder.step(request, e["rule"], "audit", True, audit_decides and j == 0, _field(e),
                      f"{engine}: audit entry")
        for j, e in enumerate(audit)
    )  # fmt: skip
    if deny:
        return tuple(steps)
    if allow:
        steps.append(WhyStep("@allow", "allow", True, not audit, test=f"{engine}: allow is true"))
    else:
        steps.append(WhyStep("@default", "deny", True, True, test=f"{engine}: allow is false"))
    return tuple(steps)


def _field(entry: Mapping[str, Any]) -> str | None:
    field = entry.get("field")
    if not isinstance(field, str) or not field or any(not p for p in field.split(".")):
        return None
    return field
