"""The decision point: one request in, one Decision out, never an exception (docs/design/policy.md).

Stages run in order and the first that refuses decides: ``@attestation``, ``@scope``,
``@schema``, the input filters, the rules, ``@default``. Any exception or deadline overrun
yields ``deny`` + ``unavailable`` + ``@unavailable``; a malformed request (not JSON, no string
``tool``, ``args``/``caller`` not objects, an integer beyond ±(2**53 - 1)) yields ``deny`` +
``input-rejected`` + ``@request``. Every value written into the why-trail is a keyed redaction
token unless its field class is ``reveal: true`` or the field is ``tool`` (docs/design/decision.md,
Redaction).

The hot path does no parsing and builds only what the Decision holds: steps whose content is
fully determined (a stage that passed, a rule outcome on the same value) are built once and
reused, so a repeated value costs no HMAC; rules on one field share the token of its value; and
records are filled slot by slot (``_internal/records.py``, and ``_fast`` for the engine's own
``Observation``, ``Hit`` and ``Ruling``). Every outcome is a ``Tri`` (``_logic``), compared with
``is``; a trail asks ``Condition.which`` for the alternative that held. All caches are bounded
and hold only complete, immutable values, so threads may share a decision point.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from jsonschema.exceptions import best_match
from rfc8785 import IntegerDomainError

from refusalkit._bounded import BoundedCache
from refusalkit._internal.failclosed import failed_decision, safe_digest
from refusalkit._internal.records import Subjects, make_decision, make_step
from refusalkit._internal.stamps import stamp
from refusalkit._internal.texts import (
    BIG_INTEGER,
    FAILED_CLOSED_TEST,
    MESSAGES,
    REQUEST_TEST,
    STAGE_CODES,
)
from refusalkit._version import __version__
from refusalkit.decide._approval import ApprovalMaker
from refusalkit.decide._attest import Attestor
from refusalkit.decide._compile import (
    UNCLASSIFIED,
    CompiledFilter,
    CompiledRule,
    CondSpec,
    FieldGroup,
    Plan,
    ToolRule,
)
from refusalkit.decide._conditions import FALSE, TRUE, UNKNOWN, json_type
from refusalkit.decide._evidence import Hit, Observation, Ruling
from refusalkit.decide._fast import hit as _hit
from refusalkit.decide._fast import observation as _observation
from refusalkit.decide._fast import ruling as _ruling
from refusalkit.decide._fields import MISSING, StepKind, element_path, run_steps, walk_strings
from refusalkit.decide._limits import Limiter
from refusalkit.decide._logic import Severity, Tri
from refusalkit.decide._pack import Pack
from refusalkit.decide._probe import WalkProbe
from refusalkit.decide._schemapath import schema_field, schema_pointer
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

_MISSING: Any = MISSING
_clock = time.perf_counter
_EMPTY: Mapping[str, Any] = {}
_CACHE_LIMIT = 4096
_ATTESTATION_CLASS = "attestation-token"
_ATTEST_TEST = "compact JWS, alg EdDSA, kid trusted, sub = caller.agent, not expired"
_DENY, _BLOCK, _ALLOW, _AUDIT = Action.DENY, Action.BLOCK, Action.ALLOW, Action.AUDIT
_POLICY_DENIED = ReasonCode.POLICY_DENIED
_APPROVAL_REQUIRED = ReasonCode.APPROVAL_REQUIRED
_RATE_LIMITED = ReasonCode.RATE_LIMITED
# Enum members as module globals: on Python 3.11 ``Severity.AUDIT`` costs a class-attribute
# lookup (~90 ns) each time; a global is a dictionary hit (so are ``TRUE``, ``FALSE``, ``UNKNOWN``).
_SEV_AUDIT, _SEV_DENY, _SEV_BLOCK = Severity.AUDIT, Severity.DENY, Severity.BLOCK
_SEV_APPROVAL = Severity.REQUIRE_APPROVAL

_SHOWN_ELEMENTS = 16  # a list step's detail names at most this many elements' outcomes


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


def _pick(outcomes: tuple[Tri, ...], every: bool) -> tuple[int | None, Tri]:
    """The element that decides a ``[*]`` condition, and the condition's outcome.

    Every element (allow): false if one is false, else unknown if one is unknown, else true;
    an empty list is unknown (no element to allow). Any element (deny, block, audit, filters):
    unknown if one is unknown (fail closed), else true if one is true, else false.
    """
    if every and FALSE in outcomes:
        return outcomes.index(FALSE), FALSE
    if UNKNOWN in outcomes:
        return outcomes.index(UNKNOWN), UNKNOWN
    if every:
        return (0, TRUE) if outcomes else (None, UNKNOWN)
    if TRUE in outcomes:
        return outcomes.index(TRUE), TRUE
    return (0 if outcomes else None), FALSE


def _check_steps(value: Any, spec: CondSpec) -> Observation:
    """A condition on a path with brackets: run its steps, fanning out over a ``[*]``."""
    value = run_steps(value, spec.rest)
    check = spec.cond.check
    if spec.each is None:
        outcome = UNKNOWN if value is _MISSING else check(value)
        return _observation(spec, value, outcome, None, None)
    if spec.walk:
        return _check_walk(value, spec)
    if type(value) is not list:
        return _observation(spec, value, UNKNOWN, None, None)
    after = spec.each
    values = [run_steps(item, after) if after else item for item in value]
    owners: list[int] | None = None
    if any(type(v) is list for v in values):  # a resolving path class: each element's forms
        values, owners = _forms(values)
    outcomes = tuple(UNKNOWN if v is _MISSING else check(v) for v in values)
    element, outcome = _pick(outcomes, spec.every)
    shown = values[element] if element is not None else _MISSING
    if owners is not None and element is not None:
        element = owners[element]
    return _observation(spec, shown, outcome, element, outcomes)


def _forms(values: list[Any]) -> tuple[list[Any], list[int]]:
    """Elements whose parse gave several forms, flattened, with the element each came from."""
    flat: list[Any] = []
    owners: list[int] = []
    for index, value in enumerate(values):
        forms = value if type(value) is list else [value]
        flat.extend(forms)
        owners.extend(index for _ in forms)
    return flat, owners


_walks = threading.local()  # per thread: the strings of the field the last ``**`` walked


def _strings(value: Any, spec: CondSpec) -> tuple[list[str], list[Any], list[str]]:
    """The paths and (parsed) values of the strings below a field, and the string each value
    was parsed from: walked once per decision and field and kind (the memo is cleared when a
    decision starts, ``_walk_reset``)."""
    after = spec.each or ()
    memo = getattr(_walks, "memo", None)
    if memo is not None and memo[0] is value and memo[1] == after:
        return memo[2], memo[3], memo[4]
    found = walk_strings(value, spec.path[:-3]) if value is not _MISSING else []
    where: list[str] = []
    values: list[Any] = []
    texts: list[str] = []
    parse = after[0].arg if len(after) == 1 and after[0].kind is StepKind.PARSE else None
    for path, text in found:
        seen = parse(text) if parse is not None else run_steps(text, after) if after else text
        if type(seen) is list:  # a resolving path class: the lexical and the resolved form
            where.extend(path for _ in seen)
            values.extend(seen)
            texts.extend(text for _ in seen)
        elif seen is not _MISSING:
            where.append(path)
            values.append(seen)
            texts.append(text)
    _walks.memo = (value, after, where, values, texts)
    return where, values, texts


def _walk_reset() -> None:
    _walks.memo = None


def _check_walk(value: Any, spec: CondSpec) -> Observation:
    """A ``**`` condition: every string below the field, combined as ``[*]`` combines elements.

    A string the class's kind cannot read is not a value of that kind (a text of many lines is
    no path), so it is left out rather than unknown; a missing field has no strings at all.
    """
    where, values, _ = _strings(value, spec)
    check = spec.cond.check
    outcomes = tuple(check(v) for v in values)
    element, outcome = _pick(outcomes, spec.every)
    if element is None:
        return _observation(spec, _MISSING, outcome, None, outcomes)
    return _observation(spec, values[element], outcome, where[element], outcomes)


def _check(request: Mapping[str, Any], spec: CondSpec) -> Observation:
    """Evaluate one condition on a request."""
    value = _lookup(request, spec.parts)
    if spec.rest or spec.each is not None:
        return _check_steps(value, spec)
    outcome = UNKNOWN if value is _MISSING else spec.cond.check(value)
    return _observation(spec, value, outcome, None, None)


def _eval_branch(
    request: Mapping[str, Any], conds: tuple[CondSpec, ...], observation: Observation | None
) -> tuple[Tri, Observation | None]:
    """All-of, three-valued: false if any is false, else unknown if any is unknown, else true."""
    unknown: Observation | None = None
    for spec in conds:
        seen = _check(request, spec)
        outcome = seen.outcome
        if outcome is FALSE:
            return FALSE, seen
        if outcome is UNKNOWN:
            if unknown is None:
                unknown = seen
        else:
            observation = seen
    if unknown is not None:
        return UNKNOWN, unknown
    return TRUE, observation


def _eval_rule(
    request: Mapping[str, Any], tool: str, rule: ToolRule
) -> tuple[Tri, Observation | None]:
    """Any-of over the branches, three-valued: true if any is, else unknown if any is."""
    if rule.always:
        return TRUE, None
    unknown: Observation | None = None
    false: Observation | None = None
    for branch in rule.branches:
        known = branch.tool
        observation = None
        if known is not None:
            observation = _observation(known.spec, tool, TRUE, None, None)
        state, observation = _eval_branch(request, branch.conds, observation)
        if state is TRUE:
            return TRUE, observation
        if state is UNKNOWN:
            if unknown is None:
                unknown = observation
        elif false is None:
            false = observation
    if unknown is not None:
        return UNKNOWN, unknown
    return FALSE, false


def _group_value(request: Mapping[str, Any], group: FieldGroup) -> Any:
    """The value a group's rules test: the field, read by the group's kind if it has one."""
    value = _lookup(request, group.parts)
    parse = group.parse
    return value if parse is None else parse(value)


def _grouped_hits(request: Mapping[str, Any], plan: Plan) -> list[Hit]:
    """Rules decided by lookups: the true ones; unknown ones for a non-string."""
    hits: list[Hit] = []
    add = hits.append  # plain loops: a generator per group costs a frame and a resume per hit
    for group in plan.groups:
        value = _group_value(request, group)
        specs = group.specs
        if type(value) is str:
            for p in group.match(value):
                add(_hit(p, TRUE, _observation(specs[p], value, TRUE, None, None)))
        else:  # a string test on a non-string (or missing) value is unknown
            for p in group.positions:
                add(_hit(p, UNKNOWN, _observation(specs[p], value, UNKNOWN, None, None)))
    return hits


def _generic_hits(
    request: Mapping[str, Any],
    tool: str,
    plan: Plan,
    trail: list[WhyStep | None],
    hits: list[Hit],
) -> None:
    """Rules checked one by one: a false one gets its fixed step, the others are hits."""
    rules = plan.rules
    for position in plan.generic:
        rule = rules[position]
        if rule.walks is not None:
            probe = rule.probe  # no string may match: what ``_walk_hit`` would find, memoised
            if probe is None:
                hit = _walk_hit(request, position, rule)
            elif probe.holds(_lookup(request, rule.walks[0].parts)):
                hit = _probed_hit(request, position, rule, probe)
            else:
                trail[position] = plan.false_steps[rule.walks[0]]
                continue
            if hit is None:
                trail[position] = plan.false_steps[rule.walks[0]]
            else:
                hits.append(hit)
            continue
        spec = rule.single
        if spec is not None:  # one condition: _eval_rule's result, without its loops
            value = _lookup(request, spec.parts)
            outcome = UNKNOWN if value is _MISSING else spec.cond.check(value)
            if outcome is FALSE:
                trail[position] = plan.false_steps[spec]
            else:
                hits.append(_hit(position, outcome, _observation(spec, value, outcome, None, None)))
            continue
        state, observation = _eval_rule(request, tool, rule)
        if state is FALSE and observation is not None and _fixed_false(observation):
            trail[position] = plan.false_steps[observation.spec]
        else:  # a false ``[*]`` condition is shown element by element, so it is built
            hits.append(_hit(position, state, observation))


def _walk_hit(request: Mapping[str, Any], position: int, rule: ToolRule) -> Hit | None:
    """A rule of ``**`` branches (any-of, one field): its strings found once, then one search
    over every branch (``walk_any``) and, where that holds, each branch's check in turn; the
    first branch that holds decides, as ``_eval_rule`` would."""
    walks = rule.walks or ()
    first = walks[0]
    where, values, _ = _strings(_lookup(request, first.parts), first)
    maybe = rule.walk_any
    if values and (maybe is None or any(type(v) is not str or maybe(v) for v in values)):
        for spec in walks:
            check = spec.cond.check
            outcomes = tuple(check(v) for v in values)
            element, outcome = _pick(outcomes, every=False)
            if outcome is not FALSE and element is not None:
                seen = _observation(spec, values[element], outcome, where[element], outcomes)
                return _hit(position, outcome, seen)
    return None


def _probed_hit(
    request: Mapping[str, Any], position: int, rule: ToolRule, probe: WalkProbe
) -> Hit | None:
    """``_walk_hit`` after the probe held (a speed twin, pinned by tests/decide/test_probe.py):
    the probe's search is not run again, and a value parsed from a string the probe cleared
    is false for every branch unasked (no branch holds on any form of that string)."""
    walks = rule.walks or ()
    first = walks[0]
    where, values, texts = _strings(_lookup(request, first.parts), first)
    cleared = probe.cleared
    asked = [i for i, text in enumerate(texts) if not cleared(text)]
    for spec in walks:
        outcomes = _asked(spec.cond.check, values, asked)
        element, outcome = _pick(outcomes, every=False)
        if outcome is not FALSE and element is not None:
            seen = _observation(spec, values[element], outcome, where[element], outcomes)
            return _hit(position, outcome, seen)
    return None


def _asked(check: Any, values: list[Any], asked: list[int]) -> tuple[Tri, ...]:
    """Each value's outcome: ``check`` on the values at ``asked``, false elsewhere."""
    if len(asked) == len(values):
        return tuple(check(v) for v in values)
    found = [FALSE] * len(values)
    for i in asked:
        found[i] = check(values[i])
    return tuple(found)


def _walks_in(compiled: Any) -> bool:
    """Whether any rule or filter of a compiled pack has a ``**`` path."""
    specs = [f.spec for f in compiled.filters]
    specs += [c for rule in compiled.rules.rules for branch in rule.branches for c in branch]
    return any(spec.walk for spec in specs)


def _fixed_false(observation: Observation) -> bool:
    """Whether a false outcome has the rule's fixed step: a plain field, or a ``**`` under any
    (no string matched; which strings there were is not worth a step per request)."""
    return observation.outcomes is None or (observation.spec.walk and not observation.spec.every)


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
        "_approvals",
        "_attestor",
        "_compiled",
        "_deadline",
        "_deadline_ms",
        "_default_steps",
        "_engine",
        "_has_stages",
        "_last_token",
        "_limiter",
        "_policy",
        "_redactor",
        "_rulings",
        "_steps",
        "_subjects",
        "_tokens",
        "_walks",
        "pack",
    )

    def __init__(self, pack: Pack, keyring: Keyring, deadline_ms: float = 50.0) -> None:
        self.pack = pack
        self._compiled = pack.compiled
        self._redactor = keyring.redactor()
        self._policy = pack.ref
        self._engine = EngineRef("refusalkit", __version__)
        self._deadline_ms = deadline_ms
        self._deadline = deadline_ms / 1000.0
        att = pack.compiled.attestation
        self._attestor = Attestor(att.trusted_keys) if att is not None else None
        compiled = pack.compiled
        self._approvals = ApprovalMaker(compiled, pack.digest, self._redactor)
        self._has_stages = bool(
            att is not None
            or compiled.capabilities is not None
            or compiled.tool_schemas
            or compiled.filters
        )
        self._limiter = Limiter(compiled.limits) if compiled.limits else None
        self._tokens: dict[str, BoundedCache[str, str]] = {}
        self._subjects = Subjects()
        self._steps: BoundedCache[Any, WhyStep] = BoundedCache(_CACHE_LIMIT)
        self._last_token = ("", "", "")
        self._walks = _walks_in(compiled)
        self._rulings = self._rule_rulings()
        effect = compiled.default.value
        self._default_steps = tuple(
            make_step("@default", effect, matched=True, decisive=decisive, test="no rule matched")
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
        log.warning(
            "%sdecision failed closed (%s): decided deny + unavailable",
            _where(line_number),
            type(exc).__name__,
        )
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
        try:
            digest = self._redactor.digest(canonical_bytes(request))
        except IntegerDomainError as exc:
            raise RequestError(BIG_INTEGER) from exc
        subject = self._subjects.get(caller.get("agent"), caller.get("session"))
        steps: list[WhyStep] = []
        if self._walks:
            _walk_reset()
        try:
            if self._has_stages:
                self._stages(request, tool, args, caller, steps)
            action, code, rule, message = self._rules(request, tool, steps)
            if self._limiter is not None and (action is _ALLOW or action is _AUDIT):
                action, code, rule, message = self._limit(
                    self._limiter, tool, caller.get("session"), steps, (action, code, rule, message)
                )
        except _Refusal as refusal:
            rule = refusal.rule
            action, code = STAGE_CODES.get(rule, (_DENY, ReasonCode.INPUT_REJECTED))
            message = refusal.message or MESSAGES.get(rule, MESSAGES["filter"])
        decision_id, decided_at = stamp()
        if code is _APPROVAL_REQUIRED:  # only a require-approval rule gives this code
            return self._approval_required(
                tool, args, caller, (decision_id, decided_at), rule, message, steps, subject, digest
            )
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

    def _approval_required(  # noqa: PLR0917 (the parts of one decision)
        self,
        tool: str,
        args: Mapping[str, Any],
        caller: Mapping[str, Any],
        stamped: tuple[str, str],
        rule: str,
        message: str | None,
        steps: list[WhyStep],
        subject: Subject,
        digest: str,
    ) -> Decision:
        """``deny`` + ``approval-required`` with its ``approval`` (docs/design/approvals.md)."""
        approval = self._approvals.make(rule, tool, args, caller.get("agent"), stamped)
        return make_decision(
            stamped[0],
            _DENY,
            _APPROVAL_REQUIRED,
            rule,
            message,
            tuple(steps),
            self._policy,
            self._engine,
            subject,
            digest,
            stamped[1],
            approval=approval,
        )

    def _limit(
        self,
        limiter: Limiter,
        tool: str,
        session: Any,
        steps: list[WhyStep],
        ruling: tuple[Action, ReasonCode | None, str, str | None],
    ) -> tuple[Action, ReasonCode | None, str, str | None]:
        """A call the rules allow, counted against the pack's limits; over one, it is refused
        ``rate-limited`` by the limit (docs/design/policy.md, Limits)."""
        over = limiter.take(tool, session)
        if over is None:
            return ruling
        steps[:] = [replace(s, decisive=False) if s.decisive else s for s in steps]
        retry = over.retry_after_s
        detail = "no retry in this session" if retry is None else f"retry in {retry:.1f} s"
        test = over.limit.test()
        step = make_step(over.limit.id, "deny", matched=True, decisive=True,
                         field="caller.session", test=test, detail=detail)  # fmt: skip
        steps.append(step)
        return _DENY, _RATE_LIMITED, over.limit.id, over.message()

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
                matched=refused,
                decisive=refused,
                field="caller.token",
                field_class=_ATTESTATION_CLASS,
                value=shown,
                test=_ATTEST_TEST,
                missing=token is None,
                detail=result.detail,
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
            "@scope",
            "deny",
            matched=refused,
            decisive=refused,
            field="tool",
            field_class=UNCLASSIFIED,
            value=tool,
            test=test,
            detail=detail,
        )

    def _schema(self, validator: Any, tool: str, args: Any, steps: list[WhyStep]) -> None:
        if validator.is_valid(args):
            step = self._steps.get(("@schema", tool))
            if step is None:
                step = make_step(
                    "@schema",
                    "deny",
                    matched=False,
                    decisive=False,
                    field="args",
                    test="json-schema",
                )
                self._remember(("@schema", tool), step)
            steps.append(step)
            return
        error = best_match(validator.iter_errors(args))
        schema_path = tuple(error.absolute_schema_path) if error is not None else ()
        field = schema_field(schema_path)
        keyword = str(error.validator) if error is not None else "?"
        detail = f"{field} violates the schema keyword '{keyword}' at {schema_pointer(schema_path)}"
        test = f"json-schema {keyword}"
        steps.append(
            make_step(
                "@schema",
                "deny",
                matched=True,
                decisive=True,
                field=field,
                test=test,
                detail=detail,
            )
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
                    matched=False,
                    decisive=False,
                    field=spec.path,
                    field_class=spec.field_class,
                    test=spec.cond.test_false,
                    missing=True,
                    detail="field absent: no text to check",
                )
                self._remember(spec, step)
            steps.append(step)
            return
        if spec.rest or spec.each is not None:
            observation = _check_steps(value, spec)
        else:
            observation = _observation(spec, value, spec.cond.check(value), None, None)
        refused = observation.outcome is not FALSE
        steps.append(self._step(item.id, "deny", refused, refused, observation))
        if refused:
            raise _Refusal(item.id, item.message)

    # -- rules --------------------------------------------------------------------------------

    def _rules(self, request: Mapping[str, Any], tool: str, steps: list[WhyStep]) -> Ruling:
        plan = self._compiled.rules.for_tool(tool)
        if not plan.rules:  # no rule can apply to this tool (an unknown tool, say)
            steps.append(self._default_steps[True])
            return self._rulings[None]
        lone = plan.lone
        if lone is not None:
            value = _group_value(request, lone)
            if type(value) is str:
                return self._lone_rules(plan, lone, value, steps)
        return self._general_rules(request, tool, plan, steps)

    def _general_rules(
        self, request: Mapping[str, Any], tool: str, plan: Plan, steps: list[WhyStep]
    ) -> Ruling:
        """The rules of any plan: the grouped rules' hits and the others checked one by one,
        ranked by position; the most severe matched rule decides, as ``_outcome`` says."""
        trail: list[Any] = list(plan.template)  # every None is filled before use
        hits = _grouped_hits(request, plan) if plan.groups else []
        rules = plan.rules
        if plan.generic:
            _generic_hits(request, tool, plan, trail, hits)
        if not hits:  # no rule matched: every step is a fixed false one, and @default decides
            steps.extend(trail)
            steps.append(self._default_steps[True])
            return self._rulings[None]
        if len(hits) > 1:
            hits.sort()  # positions are distinct, so only they are compared
        best: ToolRule | None = None
        audit: ToolRule | None = None
        unknown: Observation | None = None  # why ``best`` matched, when it matched as unknown
        matched_hits: list[tuple[int, CompiledRule, bool, Observation | None]] = []
        for position, state, observation in hits:
            rule = rules[position]
            spec = rule.rule
            severity = spec.severity
            matched = state is TRUE or (state is UNKNOWN and severity >= _SEV_APPROVAL)
            matched_hits.append((position, spec, matched, observation))
            if not matched:
                continue
            if severity is _SEV_AUDIT:
                if audit is None:
                    audit = rule
            elif best is None or severity > best.rule.severity:
                best = rule
                unknown = observation if state is UNKNOWN else None
        outcome = self._outcome(best, audit)
        if unknown is not None and best is not None and outcome.rule == best.rule.id:
            outcome = outcome._replace(message=_unknown_message(best.rule.id, unknown))
        decisive = outcome.rule
        for position, spec, matched, observation in matched_hits:
            trail[position] = self._step(
                spec.id, spec.effect, matched, spec.id == decisive, observation
            )
        steps.extend(trail)  # every position is filled by now
        if best is None:
            steps.append(self._default_steps[decisive == "@default"])
        return outcome

    def _lone_rules(
        self, plan: Plan, group: FieldGroup, value: str, steps: list[WhyStep]
    ) -> Ruling:
        """The rules of a plan that is one group, on the group's string value (a speed twin of
        the general path in ``_rules``, pinned by tests/decide/test_plan.py): every rule the
        group finds is true, so it matched, and the rest keep their fixed false steps; the
        rules are picked by position, with no hit built."""
        found = group.match(value)
        template: tuple[Any, ...] = plan.template  # a group's rules all have fixed false steps
        if not found:  # no rule matched: every step is a fixed false one, and @default decides
            steps.extend(template)
            steps.append(self._default_steps[True])
            return self._rulings[None]
        positions = sorted(found) if len(found) > 1 else found
        rules = plan.rules
        best: ToolRule | None = None
        audit: ToolRule | None = None
        for position in positions:
            rule = rules[position]
            severity = rule.rule.severity
            if severity is _SEV_AUDIT:
                if audit is None:
                    audit = rule
            elif best is None or severity > best.rule.severity:
                best = rule
        outcome = self._outcome(best, audit)
        decisive = outcome.rule
        start = len(steps)  # the rules' steps, in file order, follow the stages'
        steps.extend(template)
        specs = group.specs
        for position in positions:
            spec = rules[position].rule
            rule_id = spec.id
            steps[start + position] = self._string_step(
                rule_id, spec.effect, specs[position], TRUE, value,
                matched=True, decisive=rule_id == decisive,
            )  # fmt: skip
        if best is None:
            steps.append(self._default_steps[decisive == "@default"])
        return outcome

    def _rule_rulings(self) -> dict[int | None, Ruling]:
        """Each rule's ruling when it decides, by its index, and ``@default``'s under None: a
        refusal for ``require-approval``, ``deny`` and ``block``, else ``audit`` or ``allow``
        with the rule's message."""
        rulings: dict[int | None, Ruling] = {}
        for rule in self._compiled.rules.rules:
            severity = rule.severity
            if severity is _SEV_APPROVAL:
                message = rule.message or MESSAGES["approval"]
                made = _ruling(_DENY, _APPROVAL_REQUIRED, rule.id, message)
            elif severity > _SEV_APPROVAL:
                action = _BLOCK if severity is _SEV_BLOCK else _DENY
                made = _ruling(action, _POLICY_DENIED, rule.id, rule.message or MESSAGES["rule"])
            else:
                made = _ruling(_AUDIT if severity is _SEV_AUDIT else _ALLOW, None, rule.id,
                               rule.message)  # fmt: skip
            rulings[rule.index] = made
        if self._compiled.default is not _ALLOW:
            rulings[None] = _ruling(_DENY, _POLICY_DENIED, "@default", MESSAGES["@default"])
        else:
            rulings[None] = _ruling(_ALLOW, None, "@default", None)
        return rulings

    def _outcome(self, best: ToolRule | None, audit: ToolRule | None) -> Ruling:
        """The ruling from the most severe matched rule (first in file order) and the first
        matched audit rule: a refusal, else ``@default`` deny, else audit, else allow. Each is
        made once, when the decision point is (``_rulings``)."""
        rulings = self._rulings
        if best is not None and best.rule.severity >= _SEV_APPROVAL:
            return rulings[best.rule.index]
        if best is None and (audit is None or self._compiled.default is not _ALLOW):
            return rulings[None]  # ``@default``'s
        if audit is not None:
            return rulings[audit.rule.index]
        return rulings[best.rule.index if best is not None else None]

    # -- trail values -------------------------------------------------------------------------

    def _step(
        self, rule: str, effect: str, matched: bool, decisive: bool, observation: Observation | None
    ) -> WhyStep:
        """The step of a rule or filter; identical steps are built once and shared."""
        if observation is None:
            key: Any = (rule, matched, decisive)
            step = self._steps.get(key)
            if step is None:
                step = make_step(rule, effect, matched=matched, decisive=decisive, test="always")
                self._remember(key, step)
            return step
        if observation.outcomes is not None:
            return self._elements_step(rule, effect, matched, decisive, observation)
        spec, value, outcome = observation.spec, observation.value, observation.outcome
        if type(value) is str:
            return self._string_step(
                rule, effect, spec, outcome, value, matched=matched, decisive=decisive
            )
        missing = value is _MISSING
        shown = self._shown(spec, value)
        key = (spec, outcome, matched, decisive, shown, missing)
        step = self._steps.get(key)
        if step is None:
            step = make_step(
                rule,
                effect,
                matched=matched,
                decisive=decisive,
                field=spec.path,
                field_class=spec.field_class,
                value=shown,
                test=spec.cond.describe(outcome, value),
                missing=missing or outcome is UNKNOWN,
            )
            self._remember(key, step)
        return step

    def _string_step(
        self,
        rule: str,
        effect: str,
        spec: CondSpec,
        outcome: Tri,
        value: str,
        *,
        matched: bool,
        decisive: bool,
    ) -> WhyStep:
        """The step of a condition on a string value, keyed by the value itself: a repeat
        needs no HMAC at all."""
        key = (spec, outcome, matched, decisive, value)
        cache = self._steps
        step = cache.get(key)
        if step is None:
            text = value if spec.reveal else self._value_token(spec.field_class, value)
            step = make_step(
                rule,
                effect,
                matched=matched,
                decisive=decisive,
                field=spec.path,
                field_class=spec.field_class,
                value=text,
                test=spec.cond.describe(outcome, value),
                missing=outcome is UNKNOWN,
            )
            cache.put(key, step)
        return step

    def _elements_step(
        self, rule: str, effect: str, matched: bool, decisive: bool, observation: Observation
    ) -> WhyStep:
        """The step of a ``[*]`` condition: the deciding element, and every element's outcome."""
        spec, value, outcome = observation.spec, observation.value, observation.outcome
        missing = value is _MISSING
        shown = self._shown(spec, value)
        index = observation.element
        return make_step(
            rule,
            effect,
            matched=matched,
            decisive=decisive,
            field=_element_field(spec.path, index),
            field_class=spec.field_class,
            value=shown,
            test=spec.cond.describe(outcome, value),
            missing=missing or outcome is UNKNOWN,
            detail=_walk_detail(observation.outcomes or (), every=spec.every)
            if spec.walk
            else _elements_detail(observation.outcomes or (), every=spec.every),
        )

    def _shown(self, spec: CondSpec, value: Any) -> str | None:
        """A value as a trail shows it: None when missing, else literal (``reveal``) or token."""
        if value is _MISSING:
            return None
        if spec.reveal:
            return value if type(value) is str else value_text(value)
        return self._token(spec.field_class, value)

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
            cache = self._tokens[field_class] = BoundedCache(_CACHE_LIMIT)
        token = cache.get(value)
        if token is None:
            token = cache.put(value, self._redactor.token(field_class, value))
        return token

    def _remember(self, key: Any, step: WhyStep) -> None:
        self._steps.put(key, step)

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
        agent = session = None
        try:
            caller = request.get("caller") if isinstance(request, Mapping) else None
            if isinstance(caller, Mapping):
                agent, session = caller.get("agent"), caller.get("session")
        except Exception:  # noqa: BLE001, S110 (a request that cannot be read has no subject)
            pass
        return failed_decision(
            stage="@request" if rejected else "@unavailable",
            test=REQUEST_TEST if rejected else FAILED_CLOSED_TEST,
            problem=problem,
            policy=self._policy,
            engine=self._engine,
            subject=self._subjects.get(agent, session),
            request_digest=safe_digest(self._redactor.digest, request, raw),
            earlier=steps,
        )


def _elements_detail(outcomes: tuple[Tri, ...], *, every: bool) -> str:
    """``[*]`` outcomes element by element: ``every element: [0] true, [1] false``."""
    mode = "every element" if every else "any element"
    if not outcomes:
        return f"{mode}: the list is empty"
    shown = [f"[{i}] {o.value}" for i, o in enumerate(outcomes[:_SHOWN_ELEMENTS])]
    more = len(outcomes) - _SHOWN_ELEMENTS
    tail = f", and {more} more" if more > 0 else ""
    return f"{mode}: {', '.join(shown)}{tail}"


def _walk_detail(outcomes: tuple[Tri, ...], *, every: bool) -> str:
    """``**`` outcomes, counted: ``any string: 3 strings, 1 true``."""
    mode = "every string" if every else "any string"
    if not outcomes:
        return f"{mode}: no string below the field"
    true, false, unknown = (outcomes.count(o) for o in (TRUE, FALSE, UNKNOWN))
    counts = f"{len(outcomes)} strings, {true} true, {false} false"
    return f"{mode}: {counts}" + (f", {unknown} unknown" if unknown else "")


def _element_field(path: str, index: int | str | None) -> str:
    """The field a list step names: the path itself, element ``index`` of a ``[*]``, or the
    path of the string a ``**`` found."""
    if index is None:
        return path
    return index if type(index) is str else element_path(path, int(index))


def _unknown_message(rule: str, observation: Observation) -> str:
    """The message of a refusal whose rule could not be evaluated and counted as matched (fail
    closed): it names the field, not the rule's own message, which speaks of what it tests."""
    path = observation.spec.path
    if observation.value is _MISSING:
        return (
            f"The request has no `{path}`, which rule {rule} tests; a rule that cannot be "
            f"evaluated counts as matched (fail closed). Send `{path}`."
        )
    return (
        f"`{path}` is a JSON {json_type(observation.value)} that rule {rule} cannot test "
        f"({observation.spec.cond.test_false}); a rule that cannot be evaluated counts as matched "
        "(fail closed)."
    )


def _where(line_number: int | None) -> str:
    return f"line {line_number}: " if line_number is not None else ""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")
