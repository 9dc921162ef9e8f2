"""The decision point: one request in, one Decision out, never an exception (docs/design/policy.md).

Stages run in order and the first that refuses decides: ``@attestation``, ``@scope``,
``@schema``, the input filters, the rules, ``@default``. Any exception, deadline overrun or
malformed request yields ``deny`` + ``unavailable`` + ``@unavailable``. Every value written into
the why-trail is a keyed redaction token unless its field class is ``reveal: true`` or the field is
``tool`` (docs/design/decision.md, Redaction).

The hot path does no parsing and builds only what the Decision holds: steps whose content is
fully determined (a stage that passed, a rule outcome on the same value) are built once and
reused, so a repeated value costs no HMAC; rules on one field share the token of its value; and
records are filled slot by slot (``_records``). All caches are bounded and hold only complete,
immutable values, so threads may share a decision point.
"""

# ruff: noqa: FBT003 (WhyStep's booleans are passed positionally on the hot path)
from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

from jsonschema.exceptions import best_match

import refusalkit
from refusalkit.decide._attest import Attestor
from refusalkit.decide._compile import UNCLASSIFIED, CompiledFilter, CondSpec, Plan, ToolRule
from refusalkit.decide._conditions import FALSE, UNKNOWN
from refusalkit.decide._pack import Pack
from refusalkit.decide._records import make_decision, make_step, make_subject
from refusalkit.decide._stages import MESSAGES, STAGE_CODES, failure_step, format_args_path
from refusalkit.decide._stamps import stamp
from refusalkit.errors import RequestError
from refusalkit.keyring import Keyring
from refusalkit.model import (
    Action,
    Decision,
    EngineRef,
    ReasonCode,
    Subject,
    WhyStep,
    parse_request,
)
from refusalkit.model import canonical_json as canonical_bytes
from refusalkit.redact import value_text

__all__ = ["DecisionPoint"]

log = logging.getLogger("refusalkit.decide")

_MISSING: Any = object()
_clock = time.perf_counter
_EMPTY: Mapping[str, Any] = {}
_CACHE_LIMIT = 4096
_ATTESTATION_CLASS = "attestation-token"
_ATTEST_TEST = "compact JWS, alg EdDSA, kid trusted, sub = caller.agent, not expired"
_DENY, _BLOCK, _ALLOW, _AUDIT = Action.DENY, Action.BLOCK, Action.ALLOW, Action.AUDIT
_POLICY_DENIED = ReasonCode.POLICY_DENIED

# Why a rule came out as it did: the condition, the value it saw, and check()'s outcome.
Witness = tuple[CondSpec, Any, int] | None
Outcome = tuple[Action, ReasonCode | None, str, str | None]


class _Refusal(Exception):  # noqa: N818 (control flow inside the engine, never escapes)
    """A stage refused; carries the decisive rule id and its message."""

    def __init__(self, rule: str, message: str | None = None) -> None:
        super().__init__(rule)
        self.rule = rule
        self.message = message


def _lookup(request: Mapping[str, Any], parts: tuple[str, ...]) -> Any:
    """The value at a dotted path, or ``_MISSING``."""
    value: Any = request
    for part in parts:
        if type(value) is not dict and not isinstance(value, Mapping):
            return _MISSING
        value = value.get(part, _MISSING)
        if value is _MISSING:
            return _MISSING
    return value


def _eval_branch(
    request: Mapping[str, Any], conds: tuple[CondSpec, ...], witness: Witness
) -> tuple[int, Witness]:
    """All-of, three-valued: false if any is false, else unknown if any is unknown, else true."""
    unknown: Witness = None
    for spec in conds:
        value = _lookup(request, spec.parts)
        outcome = UNKNOWN if value is _MISSING else spec.cond.check(value)
        if outcome == FALSE:
            return -1, (spec, value, outcome)
        if outcome == UNKNOWN:
            if unknown is None:
                unknown = (spec, value, outcome)
        else:
            witness = (spec, value, outcome)
    if unknown is not None:
        return 0, unknown
    return 1, witness


def _eval_rule(request: Mapping[str, Any], tool: str, rule: ToolRule) -> tuple[int, Witness]:
    """Any-of over the branches, three-valued: 1 true, 0 unknown, -1 false."""
    if rule.always:
        return 1, None
    unknown: Witness = None
    false: Witness = None
    for conds, tool_known in rule.branches:
        witness = None if tool_known is None else (tool_known[0], tool, tool_known[1])
        state, witness = _eval_branch(request, conds, witness)
        if state == 1:
            return 1, witness
        if state == 0:
            if unknown is None:
                unknown = witness
        elif false is None:
            false = witness
    if unknown is not None:
        return 0, unknown
    return -1, false


def _grouped_hits(request: Mapping[str, Any], plan: Plan) -> list[tuple[int, int, Witness]]:
    """Rules decided by lookups: true ones with their alternative; unknown for a non-string."""
    hits: list[tuple[int, int, Witness]] = []
    for group in plan.groups:
        value = _lookup(request, group.parts)
        specs = group.specs
        if type(value) is str:
            for position, alternative in group.match(value).items():
                hits.append((position, 1, (specs[position], value, alternative)))
        else:  # a string test on a non-string (or missing) value is unknown
            hits.extend((p, 0, (specs[p], value, UNKNOWN)) for p in group.positions)
    return hits


def _generic_hits(
    request: Mapping[str, Any],
    tool: str,
    plan: Plan,
    trail: list[WhyStep | None],
    hits: list[tuple[int, int, Witness]],
) -> None:
    """Rules checked one by one: a false one gets its fixed step, the others are hits."""
    rules = plan.rules
    for position in plan.generic:
        rule = rules[position]
        spec = rule.single
        if spec is not None:  # one condition: _eval_rule's result, without its loops
            value = _lookup(request, spec.parts)
            outcome = UNKNOWN if value is _MISSING else spec.cond.check(value)
            if outcome == FALSE:
                trail[position] = plan.false_steps[spec]
            else:
                hits.append((position, 0 if outcome == UNKNOWN else 1, (spec, value, outcome)))
            continue
        state, witness = _eval_rule(request, tool, rule)
        if state == -1 and witness is not None:
            trail[position] = plan.false_steps[witness[0]]
        else:
            hits.append((position, state, witness))


def _request_parts(request: Any) -> tuple[str, Mapping[str, Any], Mapping[str, Any]]:
    """``tool``, ``args``, ``caller``; raises ``RequestError`` for a malformed request."""
    if type(request) is dict:
        tool = request.get("tool")
        args = request.get("args", _EMPTY)
        caller = request.get("caller", _EMPTY)
        if type(tool) is str and type(args) is dict and type(caller) is dict:
            return tool, args, caller
    parsed = parse_request(request)
    return parsed.tool, parsed.args, parsed.caller


class DecisionPoint:
    """Decides requests against one compiled pack with one redaction key (docs/design/policy.md).

    ``decide`` and ``decide_line`` never raise. ``deadline_ms`` bounds one decision: a decision
    that takes longer is replaced by ``deny`` + ``unavailable`` (fail closed). Safe to share
    between threads (its caches only ever hold complete, immutable values).
    """

    __slots__ = (
        "_attestor",
        "_compiled",
        "_deadline",
        "_deadline_ms",
        "_default_steps",
        "_engine",
        "_has_stages",
        "_last_token",
        "_policy",
        "_redactor",
        "_steps",
        "_subjects",
        "_tokens",
        "pack",
    )

    def __init__(self, pack: Pack, keyring: Keyring, deadline_ms: float = 50.0) -> None:
        self.pack = pack
        self._compiled = pack.compiled
        self._redactor = keyring.redactor()
        self._policy = pack.ref
        self._engine = EngineRef("refusalkit", refusalkit.__version__)
        self._deadline_ms = deadline_ms
        self._deadline = deadline_ms / 1000.0
        att = pack.compiled.attestation
        self._attestor = Attestor(att.trusted_keys) if att is not None else None
        compiled = pack.compiled
        self._has_stages = bool(
            att is not None
            or compiled.capabilities is not None
            or compiled.tool_schemas
            or compiled.filters
        )
        self._tokens: dict[str, dict[str, str]] = {}
        self._subjects: dict[tuple[Any, Any], Subject] = {}
        self._steps: dict[Any, WhyStep] = {}
        self._last_token = ("", "", "")
        effect = compiled.default.value
        self._default_steps = tuple(
            make_step("@default", effect, True, decisive, test="no rule matched")
            for decisive in (False, True)
        )

    # -- public -------------------------------------------------------------------------------

    def decide(self, request: Any) -> Decision:
        """Decide one request (a parsed JSON object). Never raises."""
        return self._guarded(request, _clock(), None)

    def decide_line(self, line: str | bytes, *, line_number: int | None = None) -> Decision:
        """Decide one JSONL line; a line that is not JSON is decided ``unavailable`` too."""
        start = _clock()
        where = _where(line_number)
        try:
            text = line.decode("utf-8") if isinstance(line, bytes | bytearray) else line
            text = text.rstrip("\r\n")
            request = json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            problem = f"{where}not JSON ({exc.msg} at column {exc.colno})"
            return self._failed(None, problem, raw=line, rejected=True)
        except (ValueError, RecursionError) as exc:  # includes UnicodeDecodeError
            problem = f"{where}not JSON ({type(exc).__name__})"
            return self._failed(None, problem, raw=line, rejected=True)
        return self._guarded(request, start, line_number)

    # -- the decision -------------------------------------------------------------------------

    def _guarded(self, request: Any, start: float, line_number: int | None) -> Decision:
        try:
            decision = self._decide(request)
        except Exception as exc:  # noqa: BLE001 (fail closed: any error is a decision)
            return self._error(request, exc, line_number)
        if _clock() - start > self._deadline:
            return self._overrun(request, decision, line_number)
        return decision

    def _error(self, request: Any, exc: Exception, line_number: int | None) -> Decision:
        if isinstance(exc, RequestError):
            problem = f"{_where(line_number)}malformed request: {exc.message}"
            return self._failed(request, problem, rejected=True)
        log.warning("decision failed closed: %s", type(exc).__name__)
        problem = f"{_where(line_number)}internal error ({type(exc).__name__})"
        return self._failed(request, problem)

    def _overrun(self, request: Any, decision: Decision, line_number: int | None) -> Decision:
        problem = f"{_where(line_number)}deadline of {self._deadline_ms:g} ms exceeded"
        return self._failed(request, problem, steps=decision.why_trail)

    def _decide(self, request: Any) -> Decision:
        if type(request) is dict:  # the common shape, checked inline; anything else is parsed
            tool = request.get("tool")
            args = request.get("args", _EMPTY)
            caller = request.get("caller", _EMPTY)
            if type(tool) is not str or type(args) is not dict or type(caller) is not dict:
                tool, args, caller = _request_parts(request)
        else:
            tool, args, caller = _request_parts(request)
        digest = self._redactor.digest(canonical_bytes(request))
        subject = self._subject(caller.get("agent"), caller.get("session"))
        steps: list[WhyStep] = []
        try:
            if self._has_stages:
                self._stages(request, tool, args, caller, steps)
            action, code, rule, message = self._rules(request, tool, steps)
        except _Refusal as refusal:
            rule = refusal.rule
            action, code = STAGE_CODES.get(rule, (_DENY, ReasonCode.INPUT_REJECTED))
            message = refusal.message or MESSAGES.get(rule, MESSAGES["filter"])
        decision_id, decided_at = stamp()
        return make_decision(
            decision_id,
            action,
            code,
            rule,
            message,
            tuple(steps),
            self._policy,
            self._engine,
            subject,
            digest,
            decided_at,
        )

    def _stages(
        self,
        request: Mapping[str, Any],
        tool: str,
        args: Mapping[str, Any],
        caller: Mapping[str, Any],
        steps: list[WhyStep],
    ) -> None:
        compiled = self._compiled
        agent = caller.get("agent")
        if self._attestor is not None:
            self._attest(self._attestor, caller, agent, steps)
        if compiled.capabilities is not None:
            self._scope(tool, agent, steps)
        if compiled.tool_schemas:
            validator = compiled.tool_schemas.get(tool)
            if validator is not None:
                self._schema(validator, tool, args, steps)
        for item in compiled.filters:
            self._filter(request, item, steps)

    # -- stages -------------------------------------------------------------------------------

    def _attest(
        self, attestor: Attestor, caller: Mapping[str, Any], agent: Any, steps: list[WhyStep]
    ) -> None:
        token = caller.get("token")
        result = attestor.verify(token, agent)
        shown = None if token is None else self._token(_ATTESTATION_CLASS, token)
        refused = not result.ok
        steps.append(
            make_step(
                "@attestation",
                "deny",
                refused,
                refused,
                "caller.token",
                _ATTESTATION_CLASS,
                shown,
                _ATTEST_TEST,
                token is None,
                result.detail,
            )
        )
        if refused:
            raise _Refusal("@attestation")

    def _scope(self, tool: str, agent: Any, steps: list[WhyStep]) -> None:
        key = ("@scope", agent, tool) if type(agent) is str else None
        step = self._steps.get(key) if key is not None else None
        if step is None:
            step = self._scope_step(tool, agent)
            if key is not None:
                self._remember(key, step)
        steps.append(step)
        if step.matched:
            raise _Refusal("@scope")

    def _scope_step(self, tool: str, agent: Any) -> WhyStep:
        caps = self._compiled.capabilities or {}
        grants = caps.get(agent) if isinstance(agent, str) else None
        granted = next((glob for glob, pred in grants or () if pred(tool)), None)
        detail = None
        if granted is not None:
            test = f"capability {granted}"
        elif grants is None:
            test, detail = "capabilities", "caller.agent is not listed in capabilities"
        else:
            test = f"capabilities [{', '.join(g for g, _ in grants)}]"
            detail = "no capability of this agent grants the tool"
        refused = granted is None
        return make_step(
            "@scope", "deny", refused, refused, "tool", UNCLASSIFIED, tool, test, False, detail
        )

    def _schema(self, validator: Any, tool: str, args: Any, steps: list[WhyStep]) -> None:
        if validator.is_valid(args):
            step = self._steps.get(("@schema", tool))
            if step is None:
                step = make_step("@schema", "deny", False, False, "args", None, None, "json-schema")
                self._remember(("@schema", tool), step)
            steps.append(step)
            return
        error = best_match(validator.iter_errors(args))
        field = format_args_path(error.absolute_path) if error is not None else "args"
        keyword = str(error.validator) if error is not None else "?"
        detail = f"{field} violates the schema keyword '{keyword}'"
        test = f"json-schema {keyword}"
        steps.append(
            make_step("@schema", "deny", True, True, field, None, None, test, False, detail)
        )
        raise _Refusal("@schema")

    def _filter(
        self, request: Mapping[str, Any], item: CompiledFilter, steps: list[WhyStep]
    ) -> None:
        spec = item.spec
        value = _lookup(request, spec.parts)
        if value is _MISSING:
            step = self._steps.get(spec)
            if step is None:
                step = make_step(
                    item.id,
                    "deny",
                    False,
                    False,
                    spec.path,
                    spec.field_class,
                    None,
                    spec.cond.test_false,
                    True,
                    "field absent: no text to check",
                )
                self._remember(spec, step)
            steps.append(step)
            return
        outcome = spec.cond.check(value)
        refused = outcome != FALSE
        steps.append(self._step(item.id, "deny", refused, refused, (spec, value, outcome)))
        if refused:
            raise _Refusal(item.id, item.message)

    # -- rules --------------------------------------------------------------------------------

    def _rules(self, request: Mapping[str, Any], tool: str, steps: list[WhyStep]) -> Outcome:
        plan = self._compiled.rules.for_tool(tool)
        if not plan.rules:  # no rule can apply to this tool (an unknown tool, say)
            steps.append(self._default_steps[True])
            return self._outcome(None, None)
        trail = list(plan.template)
        hits = _grouped_hits(request, plan) if plan.groups else []
        rules = plan.rules
        if plan.generic:
            _generic_hits(request, tool, plan, trail, hits)
        if len(hits) > 1:
            hits.sort()  # positions are distinct, so only they are compared
        best: ToolRule | None = None
        audit: ToolRule | None = None
        matched_hits: list[tuple[int, bool, Witness]] = []
        for position, state, witness in hits:
            rule = rules[position]
            severity = rule.rule.severity
            matched = state == 1 or severity >= 2
            matched_hits.append((position, matched, witness))
            if not matched:
                continue
            if severity == 0:
                if audit is None:
                    audit = rule
            elif best is None or severity > best.rule.severity:
                best = rule
        outcome = self._outcome(best, audit)
        decisive = outcome[2]
        for position, matched, witness in matched_hits:
            spec = rules[position].rule
            trail[position] = self._step(
                spec.id, spec.effect, matched, spec.id == decisive, witness
            )
        steps.extend(cast("list[WhyStep]", trail))  # every position is filled by now
        if best is None:
            steps.append(self._default_steps[decisive == "@default"])
        return outcome

    def _outcome(self, best: ToolRule | None, audit: ToolRule | None) -> Outcome:
        if best is not None and best.rule.severity >= 2:
            rule = best.rule
            action = _BLOCK if rule.severity == 3 else _DENY
            return action, _POLICY_DENIED, rule.id, rule.message or MESSAGES["rule"]
        if best is None and self._compiled.default is not _ALLOW:
            return _DENY, _POLICY_DENIED, "@default", MESSAGES["@default"]
        if audit is not None:
            return _AUDIT, None, audit.rule.id, audit.rule.message
        if best is not None:
            return _ALLOW, None, best.rule.id, best.rule.message
        return _ALLOW, None, "@default", None

    # -- trail values -------------------------------------------------------------------------

    def _step(
        self, rule: str, effect: str, matched: bool, decisive: bool, witness: Witness
    ) -> WhyStep:
        """The step of a rule or filter; identical steps are built once and shared."""
        if witness is None:
            key: Any = (rule, matched, decisive)
            step = self._steps.get(key)
            if step is None:
                step = make_step(rule, effect, matched, decisive, test="always")
                self._remember(key, step)
            return step
        spec, value, outcome = witness
        if type(value) is str:  # keyed by the value itself: a repeat needs no HMAC at all
            key = (spec, outcome, matched, decisive, value)
            cache = self._steps
            step = cache.get(key)
            if step is None:
                text = value if spec.reveal else self._value_token(spec.field_class, value)
                cond = spec.cond
                test = cond.tests[outcome] if outcome >= 0 else cond.test_false
                step = make_step(
                    rule,
                    effect,
                    matched,
                    decisive,
                    spec.path,
                    spec.field_class,
                    text,
                    test,
                    outcome == UNKNOWN,
                )
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[key] = step
            return step
        missing = value is _MISSING
        if missing:
            shown = None
        elif spec.reveal:
            shown = value if type(value) is str else value_text(value)
        else:
            shown = self._token(spec.field_class, value)
        key = (spec, outcome, matched, decisive, shown, missing)
        step = self._steps.get(key)
        if step is None:
            step = make_step(
                rule,
                effect,
                matched,
                decisive,
                spec.path,
                spec.field_class,
                shown,
                spec.cond.describe(outcome),
                missing or outcome == UNKNOWN,
            )
            self._remember(key, step)
        return step

    def _value_token(self, field_class: str, value: str) -> str:
        """The token of a string value; remembers the last one (rules on one field share it)."""
        last = self._last_token
        if last[1] is value and last[0] == field_class:
            return last[2]
        token = self._redactor.token(field_class, value)
        self._last_token = (field_class, value, token)  # replaced whole: safe between threads
        return token

    def _token(self, field_class: str, value: Any) -> str:
        """The redaction token of ``value`` in ``field_class`` (memoised for strings)."""
        if type(value) is not str:
            return self._redactor.token(field_class, value)
        cache = self._tokens.get(field_class)
        if cache is None:
            cache = self._tokens[field_class] = {}
        token = cache.get(value)
        if token is None:
            token = self._redactor.token(field_class, value)
            if len(cache) >= _CACHE_LIMIT:
                cache.clear()
            cache[value] = token
        return token

    def _remember(self, key: Any, step: WhyStep) -> None:
        if len(self._steps) >= _CACHE_LIMIT:
            self._steps.clear()
        self._steps[key] = step

    def _subject(self, agent: Any, session: Any) -> Subject:
        key = (agent if type(agent) is str else None, session if type(session) is str else None)
        subject = self._subjects.get(key)
        if subject is None:
            subject = make_subject(_encodable(key[0]), _encodable(key[1]))
            if len(self._subjects) >= _CACHE_LIMIT:
                self._subjects.clear()
            self._subjects[key] = subject
        return subject

    # -- failing closed -----------------------------------------------------------------------

    def _failed(
        self,
        request: Any,
        problem: str,
        *,
        raw: str | bytes | None = None,
        steps: tuple[WhyStep, ...] = (),
        rejected: bool = False,
    ) -> Decision:
        """``deny`` + ``unavailable`` + ``@unavailable`` with the problem in the trail.

        With ``rejected`` the request itself was malformed (not JSON, no string ``tool``, ...):
        ``deny`` + ``input-rejected`` + ``@request``, which no retry of the same bytes can change.
        """
        digest = self._redactor.digest(b"")
        try:
            if raw is not None:
                digest = self._redactor.digest(raw if isinstance(raw, bytes) else raw.encode())
            elif request is not None:
                digest = self._redactor.digest(canonical_bytes(request))
        except Exception:  # noqa: BLE001, S110 (an unencodable request keeps the empty digest)
            pass
        agent = session = None
        try:
            caller = request.get("caller") if isinstance(request, Mapping) else None
            if isinstance(caller, Mapping):
                agent, session = caller.get("agent"), caller.get("session")
        except Exception:  # noqa: BLE001, S110 (a request that cannot be read has no subject)
            pass
        earlier = tuple(replace(s, decisive=False) for s in steps)
        decision_id, decided_at = stamp()
        stage = "@request" if rejected else "@unavailable"
        return Decision(
            decision_id,
            Action.DENY,
            STAGE_CODES[stage][1],
            stage,
            MESSAGES[stage],
            (*earlier, failure_step(problem, stage=stage)),
            self._policy,
            self._engine,
            self._subject(agent, session),
            digest,
            decided_at,
        )


def _encodable(value: str | None) -> str | None:
    """A caller's agent or session id as a decision keeps it: only a ``str`` that UTF-8, and so
    RFC 8785, can encode (a lone surrogate would make the decision itself unjournalable); else
    unknown (None). Checked once per distinct id, when its ``Subject`` is made."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return value


def _where(line_number: int | None) -> str:
    return f"line {line_number}: " if line_number is not None else ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
