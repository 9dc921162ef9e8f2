# ruff: noqa: FBT003 (WhyStep's booleans are positional, as in the decide package)
"""The Cedar adapter, through ``cedarpy`` (docs/engines.md, docs/design/engines.md §Cedar).

Cedar answers Allow or Deny with the ids of the determining policies, and skips a policy whose
condition errors, for example on a missing attribute, so an erroring ``forbid`` lets the request
through. Here a forbid that errored is **matched** (unknown → deny, as in refusalkit's own
three-valued logic, docs/design/policy.md) and the trail records the error.

- Deny with determining forbids: ``deny`` / ``policy-denied``, ``matched_rule`` = the ``@id`` of
  the first of them in file order (a ``@effect("block")`` forbid first, giving ``block``).
- Deny with none: ``@default``.
- Allow: ``allow``, or ``audit`` when a determining permit is annotated ``@effect("audit")``.
- ``@reason_code("…")`` and ``@message("…")`` on a forbid set the record's code and message.

With a schema the entities are parsed with it, as Cedar does (its actions and action groups
are entities). A context holding what Cedar would read as an entity reference or extension value
(``_forgery``) is refused: a caller may not name entities (docs/design/engines.md, Mapping files).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._mapping import EngineMapping, EntitySpec, lookup
from refusalkit.engines._record import DEFAULT_MESSAGE, Outcome, Recorder, source_digest
from refusalkit.errors import PolicyError, UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, EngineRef, PolicyRef, ReasonCode, WhyStep

__all__ = ["CEDAR_DEFAULT_MAPPING", "CedarAdapter", "CedarPolicy"]

CEDAR_DEFAULT_MAPPING = EngineMapping(
    whole=("args",),
    entities=(
        EntitySpec("Agent", ("caller", "agent")),
        EntitySpec("Action", ("tool",)),
        EntitySpec("Tool", ("tool",)),
    ),
)
_ERROR = re.compile(r"^error while evaluating policy `([^`]+)`: (.*)$", re.DOTALL)
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_MISSING_ATTR = re.compile(r"does not have the attribute `([^`]+)`")
_HINT = "Fix the Cedar policies, then retry; `cedar validate` names the line."
_INSTALL = "Install the Cedar extra: pip install 'refusalkit[cedar]'."
_NO_ERRORS: dict[str, str] = {}
_EFFECTS = {"forbid": ("deny", "block"), "permit": ("allow", "audit")}


@dataclass(frozen=True, slots=True)
class CedarPolicy:
    """One static policy: Cedar's id (``policyN``, N in file order) and its annotations."""

    pid: str
    order: int
    forbid: bool
    rule: str
    effect: str
    reason_code: ReasonCode
    message: str | None
    attributes: tuple[str, ...]


def _refusal_rank(policy: CedarPolicy) -> tuple[bool, int]:
    """Which refusing forbid decides: a ``block`` one first, then file order."""
    return policy.effect != "block", policy.order


def _permit_rank(policy: CedarPolicy) -> tuple[bool, int]:
    """Which determining permit is named: an ``audit`` one first, then file order."""
    return policy.effect != "audit", policy.order


def _order(policy: CedarPolicy) -> int:
    return policy.order


def _cedarpy() -> Any:
    try:
        import cedarpy  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:
        raise UsageError("the Cedar adapter needs cedarpy", hint=_INSTALL) from exc
    return cedarpy


def _context_attributes(node: Any, out: list[str]) -> None:
    """Every ``context.X`` that a policy's condition reads, in order (Cedar's JSON policy AST)."""
    if isinstance(node, dict):
        for op in (".", "has"):
            inner = node.get(op)
            if isinstance(inner, dict) and inner.get("left") == {"Var": "context"}:
                attr = inner.get("attr")
                if isinstance(attr, str) and attr not in out:
                    out.append(attr)
        for value in node.values():
            _context_attributes(value, out)
    elif isinstance(node, list):
        for value in node:
            _context_attributes(value, out)


def _policy(pid: str, body: Mapping[str, Any], source: str) -> CedarPolicy:
    notes = body.get("annotations") or {}
    forbid = body.get("effect") == "forbid"
    effects = _EFFECTS["forbid" if forbid else "permit"]
    effect = notes.get("effect", effects[0])
    if effect not in effects:
        allowed = " or ".join(f'"{e}"' for e in effects)
        raise PolicyError(f"@effect of {pid} must be {allowed}", file=source, hint=_HINT)
    try:
        code = ReasonCode(notes.get("reason_code", ReasonCode.POLICY_DENIED.value))
    except ValueError as exc:
        known = ", ".join(c.value for c in ReasonCode)
        raise PolicyError(
            f"@reason_code of {pid} is not a reason code ({known})", file=source, hint=_HINT
        ) from exc
    attributes: list[str] = []
    _context_attributes(body.get("conditions", []), attributes)
    return CedarPolicy(
        pid,
        int(pid.removeprefix("policy")) if pid.removeprefix("policy").isdigit() else 1 << 30,
        forbid,
        notes.get("id") or pid,
        effect,
        code,
        notes.get("message"),
        tuple(attributes),
    )


def _redact_error(message: str) -> str:
    """Cedar's error, first clause only and without quoted literals.

    Cedar's messages can carry request values after a colon (``invalid IP address: <value>``)
    or in quotes; a why-trail never shows a request value in clear.
    """
    head, colon, _ = message.partition(": ")
    return "cedar: " + _QUOTED.sub('"…"', head) + (": …" if colon else "")


class CedarAdapter(Adapter):
    """Cedar policies (one file) through cedarpy, with refusalkit records (module docstring)."""

    kind = "cedar"

    def __init__(
        self,
        policies: str | Path,
        keyring: Keyring,
        *,
        mapping: EngineMapping | None = None,
        schema: str | Path | None = None,
        entities: str | Path | None = None,
        deadline_ms: float = 50.0,
    ) -> None:
        cedarpy = _cedarpy()
        self._cedarpy = cedarpy
        path = Path(policies)
        text = _read(path)
        sources = [(path.name, text.encode("utf-8"))]
        try:
            self._set = cedarpy.PolicySet.from_str(text)
            ast = json.loads(cedarpy.policies_to_json_str(text))
        except ValueError as exc:
            raise PolicyError(f"not valid Cedar: {exc}", file=str(path), hint=_HINT) from exc
        if ast.get("templates"):
            raise PolicyError("Cedar templates are not supported", file=str(path), hint=_HINT)
        self.policies = {
            pid: _policy(pid, body, str(path)) for pid, body in ast["staticPolicies"].items()
        }
        self._schema = None
        if schema is not None:
            schema_text = _read(Path(schema))
            sources.append(("schema:" + Path(schema).name, schema_text.encode("utf-8")))
            try:
                self._schema = cedarpy.Schema.from_str(schema_text)
            except ValueError as exc:
                raise PolicyError(f"not a valid Cedar schema: {exc}", file=str(schema)) from exc
        entity_text = "[]" if entities is None else _read(Path(entities))
        if entities is not None:
            sources.append(("entities:" + Path(entities).name, entity_text.encode("utf-8")))
        try:  # with the schema: its action entities and groups, its attribute types
            self._entities = cedarpy.Entities.from_json_str(entity_text, self._schema)
        except ValueError as exc:
            raise PolicyError(f"not valid Cedar entities: {exc}", file=str(entities)) from exc
        mapping = mapping or CEDAR_DEFAULT_MAPPING
        if len(mapping.entities) != 3:
            raise PolicyError(
                "a Cedar mapping needs principal, action and resource", file=mapping.source
            )
        self.mapping = mapping
        self._roles = tuple(zip(("principal", "action", "resource"), mapping.entities, strict=True))
        self._determining = {
            p.pid: (
                mapping.request_path(p.attributes[0]) if p.attributes else None,
                f"Cedar: determining {'forbid' if p.forbid else 'permit'} ({p.pid})",
            )
            for p in self.policies.values()
        }
        self._default_step = WhyStep(
            "@default", "deny", True, True, test="Cedar: no permit applied"
        )
        engine = EngineRef("cedar", "cedarpy " + metadata.version("cedarpy"))
        policy = PolicyRef(
            mapping.policy_id or path.stem,
            mapping.policy_version or "unversioned",
            source_digest(sources),
        )
        super().__init__(Recorder(keyring, engine, policy, mapping), deadline_ms)

    def cedar_request(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The request Cedar is asked (entity ids as ``{type, id}``: no Cedar syntax injection)."""
        out: dict[str, Any] = {}
        for role, spec in self._roles:
            value = lookup(request, spec.id_path)
            if type(value) is not str:
                where = ".".join(spec.id_path)
                raise AdapterFailure(f"the {role} id ({where}) is missing or not a string")
            out[role] = {"type": spec.type, "id": value}
        context = self.mapping.engine_input(request)
        if type(context) is not dict and not isinstance(context, Mapping):
            raise AdapterFailure("the Cedar context is not an object")
        forged = _forgery(context, implicit=self._schema is not None)
        if forged is not None:
            path, form = forged
            raise AdapterFailure(
                f"{self._where(path)} would be read by Cedar as {form}; a caller may not make "
                "its own entity references or extension values (send ids as strings)"
            )
        out["context"] = context
        return out

    def _where(self, path: tuple[str | int, ...]) -> str:
        """The request path of a place in the context (``("team", 0)`` → ``args.team[0]``)."""
        if not path:
            return "the Cedar context"
        head = self.mapping.request_path(str(path[0])) or str(path[0])
        return head + "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path[1:])

    def engine_answer(self, request: Mapping[str, Any]) -> Any:
        """What Cedar alone says about ``request`` (cedarpy's ``AuthzResult``)."""
        return self._cedarpy.is_authorized(
            self.cedar_request(request), self._set, self._entities, self._schema
        )

    def outcome(self, request: Mapping[str, Any]) -> Outcome:
        result = self.engine_answer(request)
        answer = result._authz_resp  # cedarpy's AuthzResult wraps this dict; read it once
        decision = answer["decision"]
        if decision not in ("Allow", "Deny"):
            why = "; ".join(_redact_error(e) for e in result.diagnostics.errors[:1])
            raise AdapterFailure(f"Cedar gave no decision ({decision}) {why}".rstrip())
        diagnostics = answer.get("diagnostics") or {}
        errors = self._errors(diagnostics.get("errors") or ())
        determining = [self._known(pid) for pid in diagnostics.get("reason") or ()]
        errored = [self._known(pid) for pid in errors]
        refusing = [p for p in (*determining, *errored) if p.forbid]
        if decision == "Deny" and not refusing and determining:
            raise AdapterFailure("Cedar denied with only permits determining")
        decisive = self._decisive(decision, refusing, determining)
        steps = self._steps(request, determining, errored, errors, decisive)
        if decisive is None:
            return Outcome(
                Action.DENY, ReasonCode.POLICY_DENIED, "@default", DEFAULT_MESSAGE, steps
            )
        if decisive.forbid:
            action = Action.BLOCK if decisive.effect == "block" else Action.DENY
            message = decisive.message or "A Cedar forbid policy refused this request."
            return Outcome(action, decisive.reason_code, decisive.rule, message, steps)
        action = Action.AUDIT if decisive.effect == "audit" else Action.ALLOW
        return Outcome(action, None, decisive.rule, decisive.message, steps)

    @staticmethod
    def _decisive(
        decision: str, refusing: list[CedarPolicy], determining: list[CedarPolicy]
    ) -> CedarPolicy | None:
        if refusing:
            return min(refusing, key=_refusal_rank)
        if decision == "Deny":
            return None
        return min(determining, key=_permit_rank)

    def _steps(
        self,
        request: Mapping[str, Any],
        determining: list[CedarPolicy],
        errored: list[CedarPolicy],
        errors: dict[str, str],
        decisive: CedarPolicy | None,
    ) -> tuple[WhyStep, ...]:
        """One step per determining or errored policy, in file order; ``@default`` if none won."""
        policies = [*determining, *(p for p in errored if p not in determining)]
        if len(policies) > 1:
            policies.sort(key=_order)
        steps = [self._step(request, p, errors.get(p.pid), p is decisive) for p in policies]
        if decisive is None:
            steps.append(self._default_step)
        return tuple(steps)

    def _step(
        self, request: Mapping[str, Any], policy: CedarPolicy, error: str | None, decisive: bool
    ) -> WhyStep:
        if error is None:
            path, test = self._determining[policy.pid]
            return self.recorder.step(request, policy.rule, policy.effect, True, decisive, path,
                                      test)  # fmt: skip
        attribute = _step_attribute(policy, error)
        path = self.mapping.request_path(attribute) if attribute is not None else None
        test = (
            f"Cedar: {policy.pid} errored; unknown counts as matched"
            if policy.forbid
            else (f"Cedar: {policy.pid} errored; an erroring permit permits nothing")
        )
        return self.recorder.step(
            request, policy.rule, policy.effect, policy.forbid, decisive, path, test,
            _redact_error(error),
        )  # fmt: skip

    def _errors(self, errors: Any) -> dict[str, str]:
        if not errors:
            return _NO_ERRORS
        out: dict[str, str] = {}
        for text in errors:
            match = _ERROR.match(text)
            if match is None:
                raise AdapterFailure(_redact_error(text))
            out[match.group(1)] = match.group(2)
        return out

    def _known(self, pid: Any) -> CedarPolicy:
        policy = self.policies.get(pid)
        if policy is None:
            raise AdapterFailure(f"Cedar named a policy the adapter does not know ({pid})")
        return policy


_ESCAPES = {
    "__entity": "an entity reference (a __entity escape)",
    "__extn": "an extension value (an __extn escape)",
    "__expr": "an expression (an __expr escape)",
}
_IMPLICIT = (
    (frozenset({"type", "id"}), "an entity reference (an object with type and id)"),
    (frozenset({"fn", "arg"}), "an extension value (an object with fn and arg)"),
    (frozenset({"fn", "args"}), "an extension value (an object with fn and args)"),
)
_ESCAPE_KEYS = frozenset(_ESCAPES)
_IMPLICIT_KEYS = frozenset({"type", "fn"})
_SCALARS = frozenset({str, bool, int, float, type(None)})
Forgery = tuple[tuple[str | int, ...], str]  # the place (keys, list indices) and the form


def _forgery(value: Any, *, implicit: bool, depth: int = 0) -> Forgery | None:
    """Where a context holds what Cedar's JSON reads as an entity or extension value, and as what.

    Cedar's JSON value format (the "JSON format of entities", its ``__entity``/``__extn``
    escapes) always reads the escapes; with a schema it also reads, wherever the schema expects
    an entity or extension value, an object with ``type`` and ``id`` (other keys ignored) or with
    ``fn`` and ``arg``/``args``. From a caller's arguments these would forge
    ``context.owner == principal``; the adapter refuses them (any depth, fail closed) without
    asking which types the schema expects, so it may refuse a record that merely has such keys.
    The context itself is a record, never read as an entity: it is checked for escapes only.
    """
    kind = type(value)
    if kind in _SCALARS:
        return None
    if depth > 64:
        return (), "an entity reference or extension value (nested too deep to check)"
    if kind is dict or isinstance(value, Mapping):
        form = _value_form(value, implicit=implicit and depth > 0)
        if form is not None:
            return (), form
        items: Any = ((str(key), item) for key, item in value.items())
    elif kind is list or isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        if type(item) not in _SCALARS:
            found = _forgery(item, implicit=implicit, depth=depth + 1)
            if found is not None:
                return (key, *found[0]), found[1]
    return None


def _value_form(obj: Mapping[str, Any], *, implicit: bool) -> str | None:
    """What Cedar reads one JSON object as, if not a record (``_forgery``)."""
    if not _ESCAPE_KEYS.isdisjoint(obj):
        return next(form for key, form in _ESCAPES.items() if key in obj)
    if implicit and not _IMPLICIT_KEYS.isdisjoint(obj):
        for keys, form in _IMPLICIT:
            if keys <= obj.keys():
                return form
    return None


def _step_attribute(policy: CedarPolicy, error: str | None) -> str | None:
    """The context attribute a step shows: the one an error names as missing, else the first."""
    if error is not None:
        match = _MISSING_ATTR.search(error)
        if match is not None and match.group(1) in policy.attributes:
            return match.group(1)
    return policy.attributes[0] if policy.attributes else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PolicyError("no such file", file=str(path), hint="Check the path.") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"cannot read: {exc}", file=str(path)) from exc
