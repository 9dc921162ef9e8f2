"""RFC 8785 bytes of a ``Decision`` without building its dict: the service's hot path.

``canonical_json(decision.to_dict())`` builds ~25 dicts a decision, walks them to prove they are
plain, then encodes them. ``DecisionEncoder`` writes the same bytes directly: the top-level keys
in their RFC 8785 order (RFC 8785 §3.2.3; all ASCII, so code-point order), each string value by
``orjson`` (RFC 8785 §3.2.2.2 escapes for an exact ``str``), and the nested records (``engine``,
``policy``, ``subject``) by the general ``canonical_json`` once per object, cached and spliced
in as ``orjson.Fragment``: the engine shares those objects between decisions. Every ``WhyStep``
is spliced in the same way, but written directly (``_step_json``, its members in RFC 8785 order),
since a step holding a value of the request is new in nearly every decision and its general
encoding was a third of what encoding a decision cost. A top-level field of an unexpected type
(a hand-built decision whose ``decided_at`` is a ``datetime``, say) sends the whole decision
down the general path, which gives the reference bytes or the reference's error.
``tests/decide/test_wire.py`` checks the bytes against ``rfc8785`` with hypothesis.

The bytes serve twice: as the journal entry (``Journal.append_encoded``) and, joined, as the
HTTP answer, so an answered decision is byte for byte the entry whose leaf hash its inclusion
proof proves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from refusalkit._bounded import BoundedCache
from refusalkit.model import Action, Decision, ReasonCode, WhyStep, canonical_json

__all__ = ["DecisionEncoder"]

_CACHE_LIMIT = 4096  # nested records remembered per kind (the engine's own caches are this size)
_NEW_LIMIT = 256  # records seen once, per kind, waiting for a second sighting
_dumps = orjson.dumps
_Fragment = orjson.Fragment


class _Unexpected(Exception):  # noqa: N818 (internal signal, never escapes)
    """A field is not of the type the fast layout assumes."""


def _general_json(record: object) -> bytes:
    """The reference bytes of a nested record: ``canonical_json`` of its wire dict."""
    return canonical_json(record.to_dict())  # type: ignore[attr-defined]


def _step_json(step: WhyStep) -> bytes:
    """The RFC 8785 bytes of ``canonical_json(step.to_dict())``, written directly: the members in
    RFC 8785 §3.2.3 order (fixed ASCII keys), each checked to be of a type orjson writes as RFC
    8785 does (``str``, ``bool``, ``None``); any other value, or a string orjson refuses (a lone
    surrogate), takes the general path, which gives the reference bytes or its error."""
    field, klass, value, test, detail = (
        step.field,
        step.field_class,
        step.value,
        step.test,
        step.detail,
    )
    if not (
        type(step.rule) is str
        and type(step.effect) is str
        and type(step.matched) is bool
        and type(step.decisive) is bool
        and type(step.missing) is bool
        and (field is None or type(field) is str)
        and (klass is None or type(klass) is str)
        and (value is None or type(value) is str)
        and (test is None or type(test) is str)
        and (detail is None or type(detail) is str)
    ):
        return _general_json(step)
    members: dict[str, object] = {"decisive": step.decisive}
    if detail is not None:  # "detail" sorts between "decisive" and "effect"
        members["detail"] = detail
    members["effect"] = step.effect
    members["field"] = field
    members["field_class"] = klass
    members["matched"] = step.matched
    if step.missing:  # "missing" sorts between "matched" and "rule"
        members["missing"] = True
    members["rule"] = step.rule
    members["test"] = test
    members["value"] = value
    try:
        return _dumps(members)
    except orjson.JSONEncodeError:
        return _general_json(step)


class _Fragments:
    """Encoded nested records as ``orjson.Fragment``s, remembered by identity (the record is
    kept alive with its entry, so its ``id`` cannot be reused while the entry stands).

    Two tables: a record seen once waits in ``_new`` (small, emptied when full) and moves to
    ``kept`` when seen again. A step holding a value of the request is seen once and never
    again, one or more a decision; kept with the others in one table, these one-off records
    filled it and emptied it every few thousand decisions, taking the records that do repeat
    with them, and each was freed long after it was made. Here they churn only ``_new``.
    """

    __slots__ = ("_encode", "_new", "kept")

    def __init__(self, encode: Callable[[Any], bytes] = _general_json) -> None:
        self._encode = encode
        self.kept: BoundedCache[int, tuple[object, orjson.Fragment]] = BoundedCache(_CACHE_LIMIT)
        self._new: BoundedCache[int, tuple[object, orjson.Fragment]] = BoundedCache(_NEW_LIMIT)

    def get(self, record: object) -> orjson.Fragment:
        """The record's fragment: from ``kept`` (the hot path's lookup, which callers may
        inline: ``kept.get(id(record))``, checked to hold ``record`` itself), else ``miss``."""
        hit = self.kept.get(id(record))
        if hit is not None and hit[0] is record:
            return hit[1]
        return self.miss(record)

    def miss(self, record: object) -> orjson.Fragment:
        """The fragment of a record not in ``kept``: moved there on its second sighting."""
        key = id(record)
        hit = self._new.get(key)
        if hit is not None and hit[0] is record:
            return self.kept.put(key, hit)[1]
        return self._new.put(key, (record, _Fragment(self._encode(record))))[1]


class DecisionEncoder:
    """RFC 8785 bytes of decisions, equal to ``canonical_json(decision.to_dict())``.

    Thread-safe: its caches are dicts updated by single operations under the GIL.
    """

    __slots__ = ("_refs", "_steps")

    def __init__(self) -> None:
        self._refs = _Fragments()  # engine, policy and subject records
        self._steps = _Fragments(_step_json)

    def encode(self, decision: Decision) -> bytes:
        """The decision's RFC 8785 bytes (the general path's error for a value it refuses)."""
        try:
            return self._layout(decision)
        except (_Unexpected, orjson.JSONEncodeError, AttributeError):
            return canonical_json(decision.to_dict())

    def _layout(self, d: Decision) -> bytes:
        """The top-level members in RFC 8785 §3.2.3 order, each scalar first checked to be of a
        type that orjson writes as RFC 8785 does (the byte-for-byte tests catch any slip)."""
        at, ident, rule, digest = d.decided_at, d.decision_id, d.matched_rule, d.request_digest
        schema, message, bound = d.schema, d.message, d.client_request_id
        action, code = d.action, d.reason_code
        if not (
            type(at) is str
            and type(ident) is str
            and type(rule) is str
            and type(digest) is str
            and type(schema) is str
            and type(action) is Action  # a StrEnum: orjson writes its value, as ``.value`` is
            and (code is None or type(code) is ReasonCode)
            and (message is None or type(message) is str)
            and (bound is None or type(bound) is str)
            and type(d.reason_codes_version) is int
            and type(d.why_trail) is tuple
            and d.approval is None  # rare (a request for approval): the general path writes it
        ):
            raise _Unexpected
        refs = self._refs.get
        kept, miss = self._steps.kept.get, self._steps.miss  # _Fragments.get, inlined
        members: dict[str, object] = {
            "action": action,
            "decided_at": at,
            "decision_id": ident,
            "engine": refs(d.engine),
            "matched_rule": rule,
            "message": message,
            "policy": refs(d.policy),
            "reason_code": code,
            "reason_codes_version": d.reason_codes_version,
            "request_digest": digest,
            "retryable": code is not None and code.retryable,
            "schema": schema,
            "subject": refs(d.subject),
            "why_trail": [
                hit[1] if (hit := kept(id(step))) is not None and hit[0] is step else miss(step)
                for step in d.why_trail
            ],
        }
        if bound is not None:  # "client_request_id" sorts between "action" and "decided_at";
            # "action", written again by the merge, keeps its first place
            members = {"action": action, "client_request_id": bound, **members}
        return _dumps(
            members,
            option=orjson.OPT_STRICT_INTEGER,
        )
