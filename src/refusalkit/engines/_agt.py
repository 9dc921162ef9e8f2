# ruff: noqa: FBT003 (WhyStep's booleans are positional, as in the decide package)
"""The Agent Governance Toolkit adapter, ``agent-governance-toolkit-core``'s ``PolicyEvaluator``.

AGT answers ``allowed``, an ``action`` string, a free-text reason and ``matched_rule``; its
audit entry names the policy and rule. The actions map to records as (docs/design/engines.md):

==================== ========================================== ==============================
AGT action           refusalkit action / reason code            matched_rule
==================== ========================================== ==============================
allow                allow                                      ``policy/rule`` or @default
audit, warn, log     audit                                      ``policy/rule``
deny                 deny / policy-denied                       ``policy/rule`` or @default
block                block / policy-denied                      ``policy/rule``
require_approval     deny / approval-required (codes v2)        ``policy/rule``
rate_limited         deny / rate-limited (codes v2)             ``policy/rule``
an evaluation or backend error, an unknown action, ``allowed`` contradicting the action:
                     deny / unavailable                         @unavailable
==================== ========================================== ==============================
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from refusalkit._internal.source import read_pack_source
from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._mapping import EngineMapping
from refusalkit.engines._record import DEFAULT_MESSAGE, Outcome, Recorder, source_digest
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, EngineRef, PolicyRef, ReasonCode

__all__ = ["AGT_ACTIONS", "AGT_DEFAULT_MAPPING", "AgtAdapter"]

AGT_DEFAULT_MAPPING = EngineMapping(
    whole=None,
    names=(("tool_name", ("tool",)), ("agent_id", ("caller", "agent")), ("*", ("args",))),
)
_INSTALL = "Install the AGT extra: pip install 'refusalkit[agt]'."
_HINT = "Fix the AGT policy document (name, version, rules, defaults)."


class AgtAction(NamedTuple):
    """What one AGT action string means in a record."""

    action: Action
    reason_code: ReasonCode | None
    allowed: bool


AGT_ACTIONS: dict[str, AgtAction] = {
    "allow": AgtAction(Action.ALLOW, None, True),
    "audit": AgtAction(Action.AUDIT, None, True),
    "warn": AgtAction(Action.AUDIT, None, True),
    "log": AgtAction(Action.AUDIT, None, True),
    "deny": AgtAction(Action.DENY, ReasonCode.POLICY_DENIED, False),
    "block": AgtAction(Action.BLOCK, ReasonCode.POLICY_DENIED, False),
    "require_approval": AgtAction(Action.DENY, ReasonCode.APPROVAL_REQUIRED, False),
    "rate_limited": AgtAction(Action.DENY, ReasonCode.RATE_LIMITED, False),
}


def _agt() -> tuple[Any, Any]:
    try:
        with warnings.catch_warnings():  # agent_os warns about its own package name on import
            warnings.simplefilter("ignore")
            from agent_os.policies.evaluator import PolicyEvaluator  # noqa: PLC0415
            from agent_os.policies.schema import PolicyDocument  # noqa: PLC0415
    except ImportError as exc:
        raise UsageError(
            "the AGT adapter needs agent-governance-toolkit-core", hint=_INSTALL
        ) from exc
    return PolicyEvaluator, PolicyDocument


def _document(path: Path, document_class: Any) -> Any:
    """The policy document, validated by AGT's own model; errors name file, line and key."""
    data, lines = read_pack_source(path, what="AGT policy")
    try:
        from pydantic import ValidationError  # noqa: PLC0415 (AGT's own dependency)

        return document_class.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(p for p in first.get("loc", ()) if isinstance(p, str | int))
        raise lines.error(f"not a valid AGT policy: {first.get('msg')}", loc, hint=_HINT) from exc


def _test(condition: Any) -> str:
    """A rule's condition in words: ``agt: path matches '^/etc/'`` (policy text, not request)."""
    return f"agt: {condition.field} {condition.operator.value} {condition.value!r}"


class AgtAdapter(Adapter):
    """An AGT policy document through AGT's ``PolicyEvaluator`` (module docstring)."""

    kind = "agt"

    def __init__(
        self,
        policy: str | Path,
        keyring: Keyring,
        *,
        mapping: EngineMapping | None = None,
        backends: Sequence[Any] = (),
        deadline_ms: float = 50.0,
    ) -> None:
        evaluator_class, document_class = _agt()
        path = Path(policy)
        document = _document(path, document_class)
        self.evaluator = evaluator_class([document])
        for backend in backends:  # AGT's extension point: external engines behind the YAML
            self.evaluator.add_backend(backend)
        self.mapping = mapping or AGT_DEFAULT_MAPPING
        self.rules = {
            (document.name, rule.name): (
                self.mapping.request_path(rule.condition.field),
                _test(rule.condition),
            )
            for rule in document.rules
        }
        engine = EngineRef(
            "agt",
            f"agent-governance-toolkit-core {metadata.version('agent-governance-toolkit-core')}",
        )
        ref = PolicyRef(
            self.mapping.policy_id or document.name,
            self.mapping.policy_version or document.version,
            source_digest([(path.name, path.read_bytes())]),
        )
        super().__init__(Recorder(keyring, engine, ref, self.mapping), deadline_ms)

    def engine_answer(self, request: Mapping[str, Any]) -> Any:
        """What AGT alone says about ``request`` (its ``PolicyDecision``)."""
        context = self.mapping.engine_input(request)
        if not isinstance(context, dict):
            raise AdapterFailure("the AGT context is not an object")
        return self.evaluator.evaluate(context)

    def outcome(self, request: Mapping[str, Any]) -> Outcome:
        result = self.engine_answer(request)
        audit = result.audit_entry or {}
        if audit.get("error"):
            raise AdapterFailure("agt: evaluation or backend error (AGT failed closed)")
        meaning = AGT_ACTIONS.get(str(result.action))
        if meaning is None:
            raise AdapterFailure("agt: an action the adapter does not know")
        if meaning.allowed is not bool(result.allowed):
            raise AdapterFailure("agt: `allowed` contradicts the action")
        policy, rule = audit.get("policy"), audit.get("rule")
        if rule is not None:
            matched = f"{policy}/{rule}"
        else:
            matched = str(policy) if str(policy).startswith("external:") else "@default"
        reason = str(result.reason)
        if rule is None:  # a backend's words may echo the input; a YAML rule's are policy text
            reason = self.recorder.scrub(reason, request)
        step = self._step(request, matched, meaning, (policy, rule), reason)
        message = None
        if meaning.action.refuses:
            message = reason if rule is not None else DEFAULT_MESSAGE
        return Outcome(meaning.action, meaning.reason_code, matched, message, (step,))

    def _step(
        self,
        request: Mapping[str, Any],
        matched: str,
        meaning: AgtAction,
        key: tuple[Any, Any],
        reason: str,
    ) -> Any:
        effect = meaning.action.value
        known = self.rules.get(key)
        if known is None:  # the default action, or an external backend's answer
            test = f"agt: {'default action' if matched == '@default' else 'backend decision'}"
            return self.recorder.step(request, matched, effect, True, True, None, test)
        path, test = known
        return self.recorder.step(request, matched, effect, True, True, path, test, reason)
