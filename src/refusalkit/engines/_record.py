"""Turning an engine's answer into a ``refusalkit.decision/v1`` record (docs/design/engines.md).

A ``Recorder`` holds what every decision of one adapter shares (the engine, the policy, the
redaction key, the mapping) and makes steps, decisions and fail-closed decisions. Values taken
from the request appear in steps only as keyed redaction tokens (docs/design/decision.md,
Redaction), unless the mapping reveals their path.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple

from rfc8785 import IntegerDomainError

from refusalkit._bounded import BoundedCache
from refusalkit._internal.failclosed import failed_decision, safe_digest
from refusalkit._internal.records import Subjects, make_decision, make_step
from refusalkit._internal.stamps import stamp
from refusalkit._internal.texts import BIG_INTEGER, MESSAGES, REQUEST_TEST
from refusalkit.engines._mapping import MISSING, EngineMapping, lookup, parse_mapping_path
from refusalkit.errors import RequestError
from refusalkit.keyring import Keyring
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    PolicyRef,
    ReasonCode,
    Subject,
    WhyStep,
    canonical_json,
)
from refusalkit.redact import value_text

__all__ = ["Outcome", "Recorder", "source_digest"]

log = logging.getLogger("refusalkit.engines")

DEFAULT_MESSAGE = MESSAGES["@default"]


class Outcome(NamedTuple):
    """An engine's answer in refusalkit's terms, before it becomes a record."""

    action: Action
    reason_code: ReasonCode | None
    matched_rule: str
    message: str | None
    steps: tuple[WhyStep, ...]
    engine: EngineRef | None = None  # set when one answer names its engine (OPA's provenance)
    policy: PolicyRef | None = None


def source_digest(parts: Iterable[tuple[str, bytes]]) -> str:
    """``sha256:`` over named sources: each ``name NUL sha256(content) LF``, sorted by name.

    One file is digested the same way, so a policy's digest changes exactly when a file's name
    or content does (docs/design/engines.md, Policy digests).
    """
    outer = hashlib.sha256()
    for name, content in sorted(parts):
        outer.update(name.encode("utf-8") + b"\x00" + hashlib.sha256(content).digest() + b"\n")
    return "sha256:" + outer.hexdigest()


_CACHE_LIMIT = 4096


class Recorder:
    """Makes the records of one adapter: steps with redacted values, decisions, failures.

    Steps and subjects are immutable, so identical ones are built once and shared (bounded
    caches, cleared whole when full, safe between threads); records are filled slot by slot
    (``refusalkit._internal.records``), as the built-in engine does.
    """

    __slots__ = ("_mac", "_paths", "_steps", "_subjects", "engine", "mapping", "policy")

    def __init__(
        self, keyring: Keyring, engine: EngineRef, policy: PolicyRef, mapping: EngineMapping
    ) -> None:
        self._mac = keyring.redactor()
        self.engine = engine
        self.policy = policy
        self.mapping = mapping
        self._paths: BoundedCache[str, tuple[tuple[str, ...], str | None, bool]] = BoundedCache(
            _CACHE_LIMIT
        )
        self._steps: BoundedCache[tuple[Any, ...], WhyStep] = BoundedCache(_CACHE_LIMIT)
        self._subjects = Subjects()

    def scrub(self, text: str, request: Mapping[str, Any]) -> str:
        """``text`` from a policy or an engine, with the request's values taken out.

        A Rego rule can compute its entry's ``rule`` or ``message`` from the input
        (``sprintf("cannot write %s", [input.args.path])``), and an AGT backend its reason: every
        string value of the request of at least 4 characters found in the text is replaced by
        its redaction token (revealed paths excepted), longest first, so the record never shows
        a request value in clear, wherever a policy put it.
        """
        found = [
            leaf
            for leaf in _string_leaves(request, "")
            if len(leaf[1]) >= _SCRUB_MIN and leaf[1] in text
        ]
        if len(found) > 1:
            found.sort(key=lambda leaf: -len(leaf[1]))
        for path, value in found:
            if path not in self.mapping.reveal:
                text = text.replace(value, self._mac.token(self.mapping.field_class(path), value))
        return text

    def _path(self, path: str) -> tuple[tuple[str, ...], str | None, bool]:
        """``(parts, field class or None if revealed, revealed)`` of a request path, memoised."""
        known = self._paths.get(path)
        if known is None:
            revealed = path in self.mapping.reveal
            field_class = None if revealed else self.mapping.field_class(path)
            known = self._paths.put(path, (parse_mapping_path(path), field_class, revealed))
        return known

    def step(  # noqa: PLR0917 (mirrors WhyStep)
        self,
        request: Mapping[str, Any],
        rule: str,
        effect: str,
        matched: bool,
        decisive: bool,
        path: str | None,
        test: str | None,
        detail: str | None = None,
    ) -> WhyStep:
        """A step about ``path`` of the request (its value redacted), or about no field."""
        if path is None:
            key: tuple[Any, ...] = (rule, effect, matched, decisive, test, detail)
            step = self._steps.get(key)
            if step is None:
                step = make_step(rule, effect, matched=matched, decisive=decisive, test=test,
                                 detail=detail)  # fmt: skip
                self._steps.put(key, step)
            return step
        parts, field_class, revealed = self._path(path)
        value = lookup(request, parts)
        if value is MISSING:
            shown = None
        elif revealed:
            shown = value_text(value)
        elif type(value) is str:
            key = (rule, effect, matched, decisive, path, test, detail, value)
            step = self._steps.get(key)
            if step is None:
                token = self._mac.token(field_class or "", value)
                step = make_step(rule, effect, matched=matched, decisive=decisive, field=path,
                                 field_class=field_class, value=token, test=test,
                                 detail=detail)  # fmt: skip
                self._steps.put(key, step)
            return step
        else:
            shown = self._mac.token(field_class or "", value)
        return make_step(rule, effect, matched=matched, decisive=decisive, field=path,
                         field_class=field_class, value=shown, test=test,
                         missing=value is MISSING, detail=detail)  # fmt: skip

    def request_digest(self, request: Mapping[str, Any]) -> str:
        """The keyed digest of the request's RFC 8785 bytes; ``RequestError`` for an integer RFC
        8785 cannot write (§3.2.2.3), a malformed request as the built-in engine decides it."""
        try:
            return self._mac.digest(canonical_json(request))
        except IntegerDomainError as exc:
            raise RequestError(BIG_INTEGER) from exc

    def decision(self, request: Mapping[str, Any], outcome: Outcome, digest: str) -> Decision:
        """The record of ``outcome`` on ``request`` whose ``request_digest`` is ``digest``."""
        decision_id, decided_at = stamp()
        return make_decision(
            decision_id,
            outcome.action,
            outcome.reason_code,
            outcome.matched_rule,
            outcome.message,
            outcome.steps,
            outcome.policy or self.policy,
            outcome.engine or self.engine,
            self._subject(request),
            digest,
            decided_at,
        )

    def failed(
        self,
        request: Any,
        problem: str,
        steps: tuple[WhyStep, ...] = (),
        raw: bytes | None = None,
        *,
        rejected: bool = False,
    ) -> Decision:
        """``deny`` + ``unavailable`` + ``@unavailable``: the decision failed closed.

        With ``rejected`` the request itself was malformed (not JSON, no string ``tool``, ...):
        ``deny`` + ``input-rejected`` + ``@request``, as the built-in engine decides it
        (docs/design/decision.md, Reason codes), so every engine answers such a request alike.
        """
        return failed_decision(
            stage="@request" if rejected else "@unavailable",
            test=REQUEST_TEST if rejected else f"the {self.engine.name} adapter failed closed",
            problem=problem,
            policy=self.policy,
            engine=self.engine,
            subject=self._subject(request),
            request_digest=safe_digest(self._mac.digest, request, raw),
            earlier=steps,
        )

    def _subject(self, request: Any) -> Subject:
        caller = request.get("caller") if isinstance(request, Mapping) else None
        if not isinstance(caller, Mapping):
            return self._subjects.get(None, None)
        return self._subjects.get(caller.get("agent"), caller.get("session"))


_SCRUB_MIN = 4


def _string_leaves(value: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """``(dotted path, string)`` of every string in a JSON value (lists keep their parent path)."""
    kind = type(value)
    if kind is str:
        yield path, value
    elif depth > 32:
        return
    elif kind is dict or isinstance(value, Mapping):
        for key, item in value.items():
            yield from _string_leaves(item, f"{path}.{key}" if path else str(key), depth + 1)
    elif kind is list:
        for item in value:
            yield from _string_leaves(item, path, depth + 1)
