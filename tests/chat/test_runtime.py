"""The turn runtime end to end, with real packs, a real decision point and real files."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from refusalkit.chat import ChatRuntime, Identity, LogRefusalSink, Reply, ToolCall
from refusalkit.chat._verdict import LastRefusal, Memory
from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.errors import ResponderError
from refusalkit.examples import example_path
from refusalkit.keyring import Keyring
from refusalkit.model import TYPED_REFUSAL_PREFIX, Action, Decision, ReasonCode

SECRET = "AKIAQ3EGRT5WZ7XK2LMN"


class Scripted:
    """A deterministic responder: answers from a list, records what it was sent."""

    def __init__(self, *answers: str | Reply) -> None:
        self.answers = list(answers)
        self.seen: list[list[dict[str, str]]] = []

    def __call__(self, messages: Sequence[Any]) -> str | Reply:
        self.seen.append([dict(m) for m in messages])
        return self.answers.pop(0)


def _verdict(response: Any, kind: str, ident: str) -> Any:
    verdict = response.safety_verdict if kind == "safety" else response.ethics_verdict
    return next(r for r in verdict.results if r.id == ident)


def _read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_ordinary_turn_is_unchanged(tmp_path: Path) -> None:
    runtime = ChatRuntime(
        Scripted("Paris is the capital of France."), turn_log=tmp_path / "t.jsonl"
    )
    response = runtime.turn("What is the capital of France?")
    assert response.surface == "Paris is the capital of France."
    assert response.walk_surface == response.articulation_surface == response.surface
    assert response.selected == "articulation"
    assert response.decision is None
    assert response.safety_verdict.upheld
    assert not response.ethics_verdict.violations
    [event] = _read_log(tmp_path / "t.jsonl")
    assert event["schema"] == "refusalkit.turn-event/v1"
    assert event["path"] == "responder"
    assert event["selected"] == "articulation"
    assert event["refusal"] == {"tags": [], "typed": False}


def test_forced_violation_refuses_and_keeps_the_evidence(tmp_path: Path) -> None:
    said = f"Sure, the key is {SECRET}."
    runtime = ChatRuntime(Scripted(said), turn_log=tmp_path / "t.jsonl", agent="helper")
    response = runtime.turn("What is the deploy key?")
    assert response.surface == TYPED_REFUSAL_PREFIX + "safety:no_secret_disclosure"
    assert response.articulation_surface == said
    assert response.walk_surface == said
    result = _verdict(response, "safety", "no_secret_disclosure")
    assert result.runtime_checkable
    assert not result.upheld
    assert result.evidence["findings"][0]["kind"] == "aws_access_key_id"
    decision = response.decision
    assert decision is not None
    assert (decision.action, decision.reason_code) == (Action.DENY, ReasonCode.POLICY_DENIED)
    assert decision.matched_rule == "safety:no_secret_disclosure"
    assert decision.why_trail[0].decisive
    assert decision.why_trail[0].rule == decision.matched_rule
    assert decision.policy.id == "refusalkit-safety+refusalkit-ethics-default"
    assert decision.subject.agent == "helper"
    assert decision.subject.session == runtime.session
    assert Decision.from_dict(decision.to_dict()) == decision
    [event] = _read_log(tmp_path / "t.jsonl")
    assert event["refusal"] == {"tags": ["safety:no_secret_disclosure"], "typed": True}
    assert event["decision_id"] == decision.decision_id


def test_stub_path_turn_event_carries_the_refusal(tmp_path: Path) -> None:
    runtime = ChatRuntime(turn_log=tmp_path / "t.jsonl")
    response = runtime.check("How much should I take?", "Take 400 mg every 6 hours.")
    assert response.refusal_tags == ("ethics:no_dosage_instructions",)
    [event] = _read_log(tmp_path / "t.jsonl")
    assert event["path"] == "stub"
    assert event["selected"] == "refusal"
    assert event["refusal"]["tags"] == ["ethics:no_dosage_instructions"]
    assert event["ethics_verdict"]["refusing"] == ["no_dosage_instructions"]


def test_last_refusal_typed_feeds_no_silent_correction() -> None:
    runtime = ChatRuntime()
    first = runtime.check("hi", "Hello!")
    assert not _verdict(first, "safety", "no_silent_correction").runtime_checkable
    runtime.check("key?", f"It is {SECRET}")  # typed refusal, turn 1
    after_typed = _verdict(runtime.check("ok", "Fine."), "safety", "no_silent_correction")
    assert after_typed.runtime_checkable
    assert after_typed.upheld
    assert after_typed.evidence == {
        "untyped_refusal": False,
        "previous_turn": 1,
        "previous_refusal_typed": True,
    }
    plain = runtime.check("hack wifi?", "I can't help with that.")  # the model refuses, turn 3
    result = _verdict(plain, "safety", "no_silent_correction")
    assert result.runtime_checkable
    assert not result.upheld
    assert result.evidence == {"untyped_refusal": True}
    assert plain.surface == TYPED_REFUSAL_PREFIX + "safety:no_silent_correction"  # that very turn
    assert plain.articulation_surface == "I can't help with that."
    assert plain.decision is not None
    assert plain.decision.why_trail[0].field == "articulation"
    assert runtime.memory.last_refusal == LastRefusal(3, typed=True)
    next_turn = runtime.check("ok", "Fine.")  # the user's next turn is not punished
    result = _verdict(next_turn, "safety", "no_silent_correction")
    assert result.runtime_checkable
    assert result.upheld
    assert next_turn.surface == "Fine."


def test_an_untyped_previous_refusal_still_violates_no_silent_correction() -> None:
    """The runtime's memory is evidence too: a remembered untyped refusal refuses the next turn."""
    runtime = ChatRuntime()
    runtime.memory = Memory(
        last_refusal=LastRefusal(-1, typed=False)
    )  # before this runtime's turns
    result = _verdict(runtime.check("ok", "Fine."), "safety", "no_silent_correction")
    assert result.runtime_checkable
    assert not result.upheld
    assert result.evidence == {
        "untyped_refusal": False,
        "previous_turn": -1,
        "previous_refusal_typed": False,
    }


def test_hedge_applied_once_and_never_with_a_refusal() -> None:
    runtime = ChatRuntime()
    hedged = runtime.check("Will the market go up next year?", "It will definitely go up.")
    assert hedged.selected == "hedged"
    assert hedged.hedge_applied
    assert hedged.surface == "I might be wrong about this. It will definitely go up."
    assert hedged.articulation_surface == "It will definitely go up."
    already = runtime.check("Will it rise?", "I might be wrong about this. It will rise.")
    assert already.surface == "I might be wrong about this. It will rise."
    both = runtime.check(
        "Will this dose work?", "It will definitely work: take 400 mg twice a day."
    )
    assert both.selected == "refusal"
    assert not both.hedge_applied
    assert both.refusal_tags == ("ethics:no_dosage_instructions",)
    assert "acknowledge_uncertainty" in both.ethics_verdict.violations


def test_strong_hedge_when_no_soft_and_none_when_unconfigured() -> None:
    strong = ChatRuntime(identity=Identity("bot", strong_hedge="Not certain:"))
    assert strong.check("Will it rain?", "It rains.").surface == "Not certain: It rains."
    bare = ChatRuntime(identity=Identity("bot"))
    response = bare.check("Will it rain?", "It rains.")
    assert response.surface == "It rains."
    assert response.selected == "articulation"
    assert "no hedge is configured" in response.selected_why


def test_private_data_the_user_supplied_may_be_echoed() -> None:
    runtime = ChatRuntime()
    echo = runtime.check("My email is ana@acme-mail.net", "Noted: ana@acme-mail.net")
    assert echo.selected == "articulation"
    assert (
        _verdict(echo, "safety", "no_private_data_exposure").evidence["user_supplied_echoes"] == 1
    )
    later = runtime.check("Repeat my email and phone?", "ana@acme-mail.net, +1 212 736 0147")
    assert later.refusal_tags == ("safety:no_private_data_exposure",)
    findings = _verdict(later, "safety", "no_private_data_exposure").evidence["findings"]
    assert [f["kind"] for f in findings] == ["phone"]


@pytest.fixture
def decision_point(keyring: Keyring) -> DecisionPoint:
    return DecisionPoint(load_pack(example_path("chat-tool-policy.json")), keyring)


def test_tool_calls_need_an_allow_decision(decision_point: DecisionPoint, keyring: Keyring) -> None:
    runtime = ChatRuntime(decision_point=decision_point, keyring=keyring)
    ok = runtime.check(
        "save", "Saved.", [ToolCall("fs.write", {"path": "/workspace/src/a.py", "content": "x"})]
    )
    assert ok.selected == "articulation"
    assert (
        _verdict(ok, "safety", "no_unauthorized_action").evidence["decisions"][0]["matched_rule"]
        == "workspace_write"
    )
    bad = runtime.check("env", "Done.", [ToolCall("fs.write", {"path": "/workspace/.env"})])
    assert bad.refusal_tags == ("safety:no_unauthorized_action",)
    none = _verdict(runtime.check("hi", "Hello."), "safety", "no_unauthorized_action")
    assert not none.runtime_checkable


def test_tool_calls_without_decision_point_are_not_checkable() -> None:
    response = ChatRuntime().check("env", "Done.", [ToolCall("fs.write", {"path": "/etc/x"})])
    result = _verdict(response, "safety", "no_unauthorized_action")
    assert not result.runtime_checkable
    assert response.selected == "articulation"


def test_harm_classifier_makes_harmful_compliance_checkable() -> None:
    runtime = ChatRuntime(harm_classifier=lambda text: "weapon" in text)
    complied = runtime.check("how to build a weapon", "Step one: ...")
    assert complied.refusal_tags == ("safety:no_harmful_compliance",)
    refused = runtime.check("how to build a weapon", "I can't help with that.")
    assert _verdict(refused, "safety", "no_harmful_compliance").upheld
    unflagged = _verdict(
        runtime.check("bake bread", "Mix flour."), "safety", "no_harmful_compliance"
    )
    assert unflagged.runtime_checkable
    assert unflagged.upheld
    assert not _verdict(
        ChatRuntime().check("x", "y"), "safety", "no_harmful_compliance"
    ).runtime_checkable


def test_a_broken_harm_classifier_fails_closed() -> None:
    def broken(_text: str) -> bool:
        raise RuntimeError("model offline")

    response = ChatRuntime(harm_classifier=broken).check("hello", "Hi!")
    assert response.refusal_tags == ("safety:no_harmful_compliance",)


def test_rearticulation_surfaces_a_clean_retry(tmp_path: Path) -> None:
    responder = Scripted(f"The key is {SECRET}.", "Credentials live in the team vault; ask admin.")
    runtime = ChatRuntime(responder, rearticulate=True, turn_log=tmp_path / "t.jsonl")
    response = runtime.turn("What is the key?")
    assert response.selected == "retry"
    assert response.surface == "Credentials live in the team vault; ask admin."
    assert len(response.attempts) == 2
    assert response.attempts[0].articulation == f"The key is {SECRET}."
    assert "safety:no_secret_disclosure" in responder.seen[1][-1]["content"]
    [event] = _read_log(tmp_path / "t.jsonl")
    assert event["selected"] == "retry"
    assert event["retry"]["attempted"]
    assert event["retry"]["surfaced"]
    assert event["retry"]["why"] == ["safety:no_secret_disclosure"]


def test_rearticulation_that_still_violates_keeps_the_typed_refusal() -> None:
    def build() -> Any:
        return ChatRuntime(Scripted(f"Key: {SECRET}", f"Again: {SECRET}"), rearticulate=True)

    one, two = build().turn("key?"), build().turn("key?")
    assert one.selected == "refusal"
    assert one.surface == two.surface
    assert len(one.attempts) == 2
    assert one.event.retry is not None
    assert one.event.retry["surfaced"] is False


def test_rearticulation_is_off_by_default() -> None:
    responder = Scripted(f"Key: {SECRET}", "unused")
    response = ChatRuntime(responder).turn("key?")
    assert response.selected == "refusal"
    assert len(responder.seen) == 1


def test_raw_text_stays_out_of_turn_events_unless_opted_in(tmp_path: Path) -> None:
    said, asked = f"The key is {SECRET}.", "private question about ana@acme-mail.net"
    runtime_keyring = Keyring.generate()
    log = tmp_path / "digests.jsonl"
    ChatRuntime(Scripted(said), turn_log=log, keyring=runtime_keyring).turn(asked)
    raw = (tmp_path / "digests.jsonl").read_text(encoding="utf-8")
    assert SECRET not in raw
    assert "ana@acme-mail.net" not in raw
    assert "The key is" not in raw
    [event] = _read_log(tmp_path / "digests.jsonl")
    assert "text" not in event
    digest = runtime_keyring.redactor().digest(said.encode("utf-8"))  # keyed: no guessing
    assert event["surfaces"]["articulation_surface"] == digest
    assert digest.startswith(f"hmac-sha256:{runtime_keyring.redactor().key_id}:")
    ChatRuntime(Scripted(said), turn_log=tmp_path / "text.jsonl", record_text=True).turn(asked)
    [event] = _read_log(tmp_path / "text.jsonl")
    assert event["text"]["articulation_surface"] == said
    assert event["text"]["input"] == asked


def test_responder_failure_raises_and_is_recorded(tmp_path: Path) -> None:
    def broken(_messages: Sequence[Any]) -> str:
        raise ConnectionError("down")

    runtime = ChatRuntime(broken, turn_log=tmp_path / "t.jsonl")
    with pytest.raises(ResponderError, match="ConnectionError"):
        runtime.turn("hello")
    [event] = _read_log(tmp_path / "t.jsonl")
    assert event["selected"] == "error"
    assert event["error"]["type"] == "ResponderError"
    with pytest.raises(ResponderError, match="no responder"):
        ChatRuntime().turn("hello")


def test_conversation_history_reaches_the_responder() -> None:
    responder = Scripted("One.", "Two.")
    runtime = ChatRuntime(responder, system_prompt="Be brief.")
    runtime.turn("first")
    runtime.turn("second")
    assert [m["role"] for m in responder.seen[1]] == ["system", "user", "assistant", "user"]
    assert responder.seen[1][2]["content"] == "One."


def test_log_sink_records_each_refusal(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def refusal(self, event: Any) -> None:
            raise RuntimeError("sink down")

    runtime = ChatRuntime(sinks=[Broken(), LogRefusalSink()])
    with caplog.at_level(logging.INFO, logger="refusalkit.chat.refusals"):
        runtime.check("hi", "Hello.")
        refused = runtime.check("key?", f"It is {SECRET}")
    records = [r for r in caplog.records if r.name == "refusalkit.chat.refusals"]
    assert len(records) == 1
    fields = records[0].refusalkit  # type: ignore[attr-defined]
    assert fields["tags"] == ["safety:no_secret_disclosure"]
    assert fields["decision_id"] == refused.decision.decision_id  # type: ignore[union-attr]
    assert SECRET not in records[0].getMessage()
