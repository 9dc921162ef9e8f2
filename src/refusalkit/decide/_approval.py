"""The ``approval`` object of a ``require-approval`` decision (docs/design/approvals.md).

Built only when a ``require-approval`` rule decides, so no other decision pays for it: the
action digest (``refusalkit.model.action_digest``), the time the request lapses (decided at +
the rule's ``ttl``), and the arguments as a why-trail would show them: every value a keyed
redaction token in the class that a condition on its path names (``unclassified`` otherwise),
unless that class is ``reveal: true`` (docs/design/decision.md, Redaction). ``seal`` is the
redaction key's HMAC over all of it with the agent and the pack digest, so an approver's tools can
tell a request this keyring's decision point made from one written into the store by anyone
else (whose shown arguments need not be the ones its digest binds).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from refusalkit.decide._compile import UNCLASSIFIED, CompiledPack
from refusalkit.model import DEFAULT_TTL_S, Approval, action_digest, format_timestamp
from refusalkit.redact import Redactor, value_text

__all__ = ["ApprovalMaker"]

_MAX_DEPTH = 32  # deeper arguments are shown as one token of the whole subtree


def _classes(compiled: CompiledPack) -> dict[str, tuple[str, bool]]:
    """``field path -> (class, reveal)`` of every condition on a path under ``args``."""
    found: dict[str, tuple[str, bool]] = {}
    specs = [spec for rule in compiled.rules.rules for branch in rule.branches for spec in branch]
    specs.extend(item.spec for item in compiled.filters)
    for spec in specs:
        if spec.path.startswith("args.") and spec.path not in found:
            found[spec.path] = (spec.field_class, spec.reveal)
    return found


def _later(decided_at: str, seconds: int) -> str:
    moment = dt.datetime.fromisoformat(decided_at.replace("Z", "+00:00"))
    return format_timestamp(moment + dt.timedelta(seconds=seconds))


class ApprovalMaker:
    """Makes the ``approval`` of a pack's ``require-approval`` decisions."""

    __slots__ = ("_classes", "_pack_digest", "_redactor", "_ttls")

    def __init__(self, compiled: CompiledPack, pack_digest: str, redactor: Redactor) -> None:
        self._ttls = {r.id: r.ttl for r in compiled.rules.rules if r.ttl is not None}
        self._classes = _classes(compiled)
        self._pack_digest = pack_digest
        self._redactor = redactor

    def make(
        self, rule: str, tool: str, args: Mapping[str, Any], agent: Any, stamp: tuple[str, str]
    ) -> Approval:
        """The approval of a request that ``rule`` decided, with the decision's id and time."""
        decision_id, decided_at = stamp
        who = agent if type(agent) is str else None
        approval = Approval(
            request_id=decision_id,
            action_digest=action_digest(tool, args, who, self._pack_digest),
            expires_at=_later(decided_at, self._ttls.get(rule, DEFAULT_TTL_S)),
            tool=tool,
            args=self._shown(args, "args", 0),
        )
        seal = self._redactor.digest(approval.sealed_body(who, self._pack_digest))
        return replace(approval, seal=seal)

    def _shown(self, value: Any, path: str, depth: int) -> Any:
        if isinstance(value, Mapping) and depth < _MAX_DEPTH:
            return {str(k): self._shown(v, f"{path}.{k}", depth + 1) for k, v in value.items()}
        if isinstance(value, list) and depth < _MAX_DEPTH:
            return [self._shown(v, f"{path}[*]", depth + 1) for v in value]
        field_class, reveal = self._classes.get(path, (UNCLASSIFIED, False))
        if reveal and value is not None:
            return value_text(value)
        return self._redactor.token(field_class, value)
