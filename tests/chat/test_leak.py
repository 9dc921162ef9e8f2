"""Leak test (docs/design/decision.md, Redaction; docs/design/chat.md): for a conversation
carrying secrets and third-party personal data, nothing the chat guard writes (replay output,
``--show-verdicts``, the turn log, the journal, telemetry, logs, errors) contains any of those
values or an 8-character substring.

Without ``record_text`` every span the safety detectors find is replaced by its keyed redaction
token; with ``record_text`` the raw text is the deployment's explicit choice."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from refusalkit.chat import ChatRuntime, LogRefusalSink, ToolCall
from refusalkit.chat._scrub import redact_text
from refusalkit.chat._values import is_filler
from refusalkit.cli import app
from refusalkit.errors import ResponderError
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring
from support.openai_server import OpenAIServer

KEY_BODY = (
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDqK7Zr0sVb2mFhT8cW1xq9nB4yL3pE6uJ0aR5tD2vXgwAAAJgq0dP1KtHT"
)
PRIVATE_KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_BODY}\n-----END OPENSSH PRIVATE KEY-----"
SECRETS = {
    "aws_key": "AKIAQ3EGRT5WZ7XK2LMN",
    "private_key_body": KEY_BODY,
    "db_password": "Tr0ub4dor-and-3x",
    "card": "4539 1488 0343 6467",
    "card_digits": "4539148803436467",
    "email": "bob.martin@contoso-corp.com",
    "own_email": "ana.silva@acme-mail.net",
}
DB_URL = f"postgres://admin:{SECRETS['db_password']}@db.internal.corp:5432/billing"
REDACTED = re.compile(r"<redacted:hmac-sha256:[^:>]+:[0-9a-f]{16}>")


def transcript() -> list[dict[str, Any]]:
    """Every value in a response, some in tool-call arguments, one echoed back to its owner."""
    return [
        {"input": "deploy key?", "response": f"Sure, the key is {SECRETS['aws_key']} (admin)."},
        {"input": "the ssh key?", "response": f"Here it is:\n{PRIVATE_KEY}\nKeep it safe."},
        {"input": "prod db?", "response": f"It is {DB_URL}."},
        {"input": "which card?", "response": f"The customer paid with {SECRETS['card']}."},
        {"input": "Bob's address?", "response": f"Write to {SECRETS['email']}."},
        {
            "input": f"My email is {SECRETS['own_email']}; sign for me.",
            "response": f"Ana Silva\n{SECRETS['own_email']}",
        },
        {
            "input": "save the config",
            "response": "Saved.",
            "tool_calls": [
                {"tool": "fs.write", "args": {"path": "/workspace/c.env", "content": DB_URL}},
                {"tool": "mail.send", "args": {"to": [SECRETS["email"]], "n": 1}},
            ],
        },
        {"input": "thanks", "response": f"Card digits: {SECRETS['card_digits']}"},
    ]


def substrings(secret: str) -> set[str]:
    return {secret[i : i + 8] for i in range(len(secret) - 7)}


def assert_no_leak(text: str) -> None:
    for name, secret in SECRETS.items():
        for piece in substrings(secret):
            assert piece not in text, f"{name}: {piece!r} leaked"


def write_transcript(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(t) for t in transcript()) + "\n", encoding="utf-8")
    return path


def stored_text(path: Path) -> str:
    """Every byte of a stored file (an SQLite journal included), as text."""
    return path.read_bytes().decode("latin-1")


def test_the_leak_test_can_see_a_leak() -> None:
    """Precondition: the values are in the transcript and are what the detectors find."""
    raw = json.dumps(transcript())
    with pytest.raises(AssertionError, match="leaked"):
        assert_no_leak(raw.replace("\\n", "\n"))


def test_replay_output_turn_log_and_journal_leak_nothing(
    tmp_path: Path, keyring_path: Path
) -> None:
    source = write_transcript(tmp_path / "t.jsonl")
    log, store = tmp_path / "turns.jsonl", tmp_path / "journal.db"
    args = ["chat", "replay", str(source), "--keyring", str(keyring_path)]
    result = CliRunner().invoke(app, [*args, "--turn-log", str(log), "--journal", str(store)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == len(transcript())
    assert [x["selected"] for x in lines][:5] == ["refusal"] * 5
    assert lines[0]["articulation_surface"].startswith("Sure, the key is <redacted:hmac-sha256:")
    assert "Keep it safe." in lines[1]["articulation_surface"]  # only the key block is replaced
    assert REDACTED.search(lines[5]["surface"])  # the user's own address, echoed: still redacted
    assert_no_leak(result.output)
    assert_no_leak(stored_text(log))
    assert_no_leak(stored_text(store))


def test_redaction_tokens_are_keyed_and_correlate(keyring: Keyring) -> None:
    runtime = ChatRuntime(keyring=keyring)
    one = runtime.check("a", f"Write to {SECRETS['email']}.").to_dict()
    two = runtime.check("b", f"Mail {SECRETS['email']} now").to_dict()
    token = keyring.redactor().token("private-data:email", SECRETS["email"])
    assert one["articulation_surface"] == f"Write to {token}."
    assert two["articulation_surface"] == f"Mail {token} now"
    other = ChatRuntime(keyring=Keyring.generate()).check("a", f"Write to {SECRETS['email']}.")
    assert token not in other.to_dict()["articulation_surface"]


def test_attempts_errors_logs_and_telemetry_leak_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, keyring: Keyring
) -> None:
    caplog.set_level(logging.DEBUG)
    drafts = iter([f"Key: {SECRETS['aws_key']}", f"Fine, it is {DB_URL}"])

    def responder(_messages: Sequence[Any]) -> str:
        return next(drafts)

    def broken(_messages: Sequence[Any]) -> str:
        raise ConnectionError(f"cannot reach {DB_URL}")

    log, out = tmp_path / "turns.jsonl", []
    with open_journal(tmp_path / "journal.db", keyring) as journal:
        kw: dict[str, Any] = {"turn_log": log, "journal": journal, "keyring": keyring}
        runtime = ChatRuntime(responder, rearticulate=True, sinks=[LogRefusalSink()], **kw)
        response = runtime.turn("key?")
        assert len(response.attempts) == 2
        out.append(json.dumps(response.to_dict()))
        with pytest.raises(ResponderError) as caught:
            ChatRuntime(broken, **kw).turn("hello")
        out.append(caught.value.message)
        calls = (ToolCall("fs.write", {"content": PRIVATE_KEY}),)
        out.append(json.dumps(ChatRuntime(**kw).check("x", "ok", calls).to_dict()))
    assert response.attempts[1].articulation.endswith(DB_URL)  # in memory: raw, for the caller
    assert_no_leak("\n".join(out) + caplog.text + stored_text(log))
    assert_no_leak(stored_text(tmp_path / "journal.db"))


def test_show_verdicts_leaks_nothing(tmp_path: Path, keyring_path: Path) -> None:
    with OpenAIServer(lambda _body: f"The card is {SECRETS['card']}.") as server:
        result = CliRunner().invoke(
            app,
            [
                *("chat", "--endpoint", server.base_url, "--model", "test-model"),
                *("--keyring", str(keyring_path), "--show-verdicts"),
            ],
            input="which card?\n/exit\n",
        )
    assert result.exit_code == 0, result.output
    assert "safety:no_private_data_exposure: VIOLATED" in result.output
    assert "withheld:" in result.output
    assert_no_leak(result.output)


def test_record_text_is_an_explicit_opt_in(tmp_path: Path) -> None:
    said = f"Write to {SECRETS['email']}."
    runtime = ChatRuntime(record_text=True, turn_log=tmp_path / "t.jsonl")
    response = runtime.check("Bob?", said)
    assert response.to_dict()["articulation_surface"] == said
    [event] = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text("utf-8").splitlines()]
    assert event["text"]["articulation_surface"] == said


FILLER = st.text(alphabet=st.sampled_from("abc XYZ.,\n:;-"), max_size=40)


@settings(max_examples=100, deadline=None)
@given(
    before=FILLER,
    after=FILLER,
    # a key id's random body (a filler such as 16 times "2" is a placeholder: test_precision.py)
    key=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", min_size=16, max_size=16).filter(
        lambda k: not is_filler(f"AKIA{k}")
    ),
    user=st.text(alphabet="abcdefghij.", min_size=3, max_size=12).filter(
        lambda u: not u.startswith(".") and not u.endswith(".") and ".." not in u
    ),
)
def test_redact_text_removes_every_detected_value(
    before: str, after: str, key: str, user: str
) -> None:
    redactor = Keyring.generate().redactor()
    aws, email = f"AKIA{key}", f"{user}@mail-host.org"
    text = f"{before} {aws} {after} {email} {before}"
    out = redact_text(text, redactor)
    for value in (aws, email):
        assert not any(piece in out for piece in substrings(value)), out
    assert redactor.token("secret:aws_access_key_id", aws) in out
    assert redactor.token("private-data:email", email.lower()) in out
    assert redact_text(text, redactor) == out  # deterministic for one key


def test_text_dressed_as_a_token_is_still_redacted(keyring: Keyring) -> None:
    """A model cannot smuggle a card number through by wrapping it in a token's shape."""
    forged = f"<redacted:hmac-sha256:k1:{SECRETS['card_digits']}>"
    out = redact_text(f"see {forged}", keyring.redactor())
    assert_no_leak(out)
