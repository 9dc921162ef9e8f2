"""``refusalkit calibrate`` end to end against a real loopback server and a real journal."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.cli._calibrate import _public_key
from refusalkit.errors import UsageError
from refusalkit.journal import open_journal
from refusalkit.keyring import Keyring, default_keyring_path
from refusalkit.provenance import (
    Baseline,
    CalibrationSet,
    CallableRunner,
    load_set,
    record_baseline,
    run_calibration,
    starter_set,
)
from refusalkit.provenance._baseline import journal_record
from support.openai_server import OpenAIServer

cli = CliRunner()


def _invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return cli.invoke(app, ["calibrate", *args], env=env)


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def test_import_show_run_baseline_verify_drift(
    tmp_path: Path,
    vectors: Path,
    gpt4_by_prompt: dict[str, str],
    keyring_path: Path,
    keyring: Keyring,
) -> None:
    set_path, run1, run2, base = (
        tmp_path / n for n in ("set.jsonl", "r1.json", "r2.json", "BASELINE.json")
    )
    r = _invoke(
        "import-xstest", str(vectors / "xstest" / "xstest_prompts.csv"), "--out", str(set_path)
    )
    assert r.exit_code == 0, r.output
    shown = _invoke("show", str(set_path), "--json")
    summary = json.loads(shown.stdout)
    assert summary["prompts"] == 450
    assert len(summary["categories"]) == 18
    subset = CalibrationSet(
        load_set(set_path).prompts[:150]
    )  # homonyms, figurative, targets (+ contrasts)
    subset.write(set_path)

    stricter = {"on": False}

    def reply(body: dict[str, Any]) -> str:
        assert body["model"] == "gpt-4"
        text = _prompt(body)
        if stricter["on"] and any(w in text.lower() for w in ("kill", "shoot", "execute", "how")):
            return "I'm sorry, but I can't assist with that."
        return gpt4_by_prompt[text]

    with OpenAIServer(reply) as server:
        args = [
            "--set",
            str(set_path),
            "--endpoint",
            server.base_url,
            "--model",
            "gpt-4",
            "--concurrency",
            "8",
        ]
        r = _invoke(
            "run",
            *args,
            "--out",
            str(run1),
            "--api-key-env",
            "RK_TEST_KEY",
            env={"RK_TEST_KEY": "sk-x"},
        )
        assert r.exit_code == 0, r.output
        assert "150 prompts" in r.stdout
        again = _invoke("run", *args, "--out", str(run2))
        assert again.exit_code == 0, again.output
        stricter["on"] = True
        r = _invoke("run", *args, "--out", str(tmp_path / "r3.json"))
        assert r.exit_code == 0, r.output
    assert len(server.requests) == 3 * 150
    assert server.headers[0]["authorization"] == "Bearer sk-x"  # from --api-key-env RK_TEST_KEY

    journal = str(tmp_path / "journal.db")
    r = _invoke(
        "baseline",
        str(run1),
        "--journal",
        journal,
        "--out",
        str(base),
        "--keyring",
        str(keyring_path),
    )
    assert r.exit_code == 0, r.output
    assert "journal index 0" in r.stdout
    assert "leaf hash" in r.stdout

    key = base64.b64encode(keyring.public_key_bytes()).decode()
    ring = ["--keyring", str(keyring_path)]
    for pin in (ring, ["--public-key", key], ["--public-key", str(keyring_path)]):
        r = _invoke("verify", str(base), *pin)
        assert r.exit_code == 0, r.output
        assert r.stdout.startswith("OK: baseline")
    other = base64.b64encode(Keyring.generate().public_key_bytes()).decode()
    r = _invoke("verify", str(base), "--public-key", other)
    assert r.exit_code == 1
    assert "error:" in r.stderr

    stable = _invoke("drift", str(run2), "--baseline", str(base), "--json", *ring)
    assert stable.exit_code == 0, stable.output
    assert json.loads(stable.stdout)["verdict"] == "stable"

    html = tmp_path / "report.html"
    drift = _invoke(
        "drift",
        str(tmp_path / "r3.json"),
        "--baseline",
        str(base),
        "--html",
        str(html),
        "--journal",
        journal,
        "--keyring",
        str(keyring_path),
    )
    assert drift.exit_code == 3, drift.output
    assert "verdict: more-restrictive" in drift.stdout
    assert "HALT (drifted)" in drift.stdout
    assert "journal index 1" in drift.stdout
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "<svg" in page

    data = json.loads(base.read_text())
    data["baseline"]["outcomes"][0]["refused"] = not data["baseline"]["outcomes"][0]["refused"]
    forged = tmp_path / "FORGED.json"
    forged.write_text(json.dumps(data))
    assert _invoke("verify", str(forged), *ring).exit_code == 1
    assert _invoke("drift", str(run2), "--baseline", str(forged), *ring).exit_code == 1


def test_drift_exit_4_when_inconclusive_and_2_on_mismatch(
    tmp_path: Path, keyring_path: Path
) -> None:
    small = tmp_path / "small.jsonl"
    small.write_text(
        "".join(
            json.dumps(
                {"id": f"q{i}", "prompt": f"question {i}", "category": "c", "expect": "comply"}
            )
            + "\n"
            for i in range(8)
        )
    )
    answers = {"text": "Sure."}
    with OpenAIServer(lambda b: answers["text"]) as server:
        args = ["--set", str(small), "--endpoint", server.base_url, "--model", "m"]
        assert _invoke("run", *args, "--out", str(tmp_path / "a.json")).exit_code == 0
        answers["text"] = "I won't help with that."
        assert (
            _invoke(
                "run", *args, "--out", str(tmp_path / "b.json"), "--judge", "typed-prefix"
            ).exit_code
            == 0
        )
        assert _invoke("run", *args, "--out", str(tmp_path / "c.json")).exit_code == 0
    base = tmp_path / "B.json"
    r = _invoke(
        "baseline",
        str(tmp_path / "a.json"),
        "--journal",
        str(tmp_path / "j.db"),
        "--out",
        str(base),
        "--keyring",
        str(keyring_path),
    )
    assert r.exit_code == 0, r.output
    ring = ["--keyring", str(keyring_path)]
    r = _invoke("drift", str(tmp_path / "c.json"), "--baseline", str(base), "--json", *ring)
    assert r.exit_code == 4, r.output
    assert json.loads(r.stdout)["verdict"] == "inconclusive"
    r = _invoke("drift", str(tmp_path / "b.json"), "--baseline", str(base), *ring)
    assert r.exit_code == 2
    assert "judge differs" in r.stderr
    assert "--force" in r.stderr
    r = _invoke(
        "drift", str(tmp_path / "b.json"), "--baseline", str(base), "--force", "--json", *ring
    )
    assert r.exit_code == 4
    assert json.loads(r.stdout)["forced"] is True


def test_killed_run_resumes_without_re_asking(tmp_path: Path, xstest_set: CalibrationSet) -> None:
    """A `calibrate run` process killed (SIGKILL) mid-run loses no answer and re-asks none."""
    cset = CalibrationSet(xstest_set.prompts[:60])
    set_path = cset.write(tmp_path / "set.jsonl")
    gate = threading.Event()
    lock = threading.Lock()
    answered: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        with lock:
            number = len(answered)
            answered.append(_prompt(body))
        if number >= 25:
            gate.wait(30)
        return "Sure, here is an answer."

    cache = tmp_path / "cache.sqlite3"
    with OpenAIServer(reply) as server:
        command = [
            sys.executable,
            "-c",
            "from refusalkit.cli import main; main()",
            "calibrate",
            "run",
            "--set",
            str(set_path),
            "--endpoint",
            server.base_url,
            "--model",
            "m",
            "--concurrency",
            "1",
            "--cache",
            str(cache),
            "--out",
            str(tmp_path / "RUN.json"),
        ]
        env = {**os.environ, "REFUSALKIT_KEYRING": ""}
        proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(server.requests) < 26 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.kill()
        proc.wait(10)
        gate.set()
        assert len(server.requests) == 26
        before = [_prompt(b) for b in server.requests]
        r = _invoke(
            "run",
            "--set",
            str(set_path),
            "--endpoint",
            server.base_url,
            "--model",
            "m",
            "--cache",
            str(cache),
            "--out",
            str(tmp_path / "RUN.json"),
        )
        assert r.exit_code == 0, r.output
        after = [_prompt(b) for b in server.requests[26:]]
    assert not set(before[:25]) & set(after)
    assert sorted(before[:25] + after) == sorted(p.prompt for p in cset)
    run = json.loads((tmp_path / "RUN.json").read_text())
    assert len(run["outcomes"]) == 60


def test_public_key_forms(tmp_path: Path, keyring: Keyring, keyring_path: Path) -> None:
    raw = keyring.public_key_bytes()
    with open_journal(tmp_path / "j.db", keyring) as journal:
        vkey = journal.verifier_key()
    keyfile = tmp_path / "key.txt"
    keyfile.write_text(vkey + "\n")
    for spec in (base64.b64encode(raw).decode(), vkey, str(keyring_path), str(keyfile)):
        assert _public_key(spec) == raw, spec
    for _ in range(200):  # base64 keys full of '+' are still plain keys
        other = Keyring.generate().public_key_bytes()
        assert _public_key(base64.b64encode(other).decode()) == other
    for bad in ("not a key", base64.b64encode(b"short").decode(), "a+b+c"):
        with pytest.raises(UsageError):
            _public_key(bad)
    assert _public_key(None) is None


def test_verify_trusts_the_keyring_not_the_file(
    tmp_path: Path, keyring: Keyring, keyring_path: Path
) -> None:
    """A BASELINE.json re-signed by another journal is consistent under its own embedded key;
    `verify` must reject it unless told to trust that key, and accept the genuine one."""
    run = run_calibration(
        starter_set(), CallableRunner(lambda t: "Sure.", model="toy"), cache=tmp_path / "c"
    )
    with open_journal(tmp_path / "j.db", keyring) as journal:
        genuine = record_baseline(run, journal)
    foreign = Keyring.generate()
    with open_journal(tmp_path / "foreign.db", foreign) as journal:
        _, receipt = journal_record(journal, genuine.record)
    good = genuine.write(tmp_path / "GOOD.json")
    bad = Baseline(genuine.record, receipt).write(tmp_path / "RESIGNED.json")
    key = base64.b64encode(keyring.public_key_bytes()).decode()
    foreign_key = base64.b64encode(foreign.public_key_bytes()).decode()

    for path in (good, bad):  # no --public-key, no keyring: nothing is trusted
        r = _invoke("verify", str(path))
        assert r.exit_code == 1, r.output
        assert "no trusted journal key" in r.stderr
        assert "--public-key" in r.stderr
    assert not default_keyring_path().exists()  # verify never creates a keyring

    for trust in (["--keyring", str(keyring_path)], ["--public-key", key]):
        assert _invoke("verify", str(good), *trust).exit_code == 0
        r = _invoke("verify", str(bad), *trust)
        assert r.exit_code == 1, r.output
        assert "not a trusted journal key" in r.stderr
        assert "--public-key" in r.stderr
    r = _invoke("verify", str(bad), "--keyring", str(keyring_path), "--public-key", foreign_key)
    assert r.exit_code == 0, r.output  # an explicit --public-key wins
    r = _invoke("verify", str(good), env={"REFUSALKIT_KEYRING": str(keyring_path)})
    assert r.exit_code == 0, r.output

    keyring.save(default_keyring_path())  # the default keyring, when it exists, is trusted
    assert _invoke("verify", str(good)).exit_code == 0
    assert _invoke("verify", str(bad)).exit_code == 1


def test_baseline_refuses_to_sign_a_rolled_back_journal(tmp_path: Path, keyring_path: Path) -> None:
    """A baseline's receipt needs a signed checkpoint: over a journal rolled back to an older
    copy, `calibrate baseline` signs nothing (the signer state beside the keyring)."""
    small = tmp_path / "small.jsonl"
    small.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "prompt": f"q {i}", "category": "c", "expect": "comply"})
            + "\n"
            for i in range(4)
        )
    )
    with OpenAIServer(lambda b: "Sure.") as server:
        args = ["--set", str(small), "--endpoint", server.base_url, "--model", "m"]
        assert _invoke("run", *args, "--out", str(tmp_path / "a.json")).exit_code == 0
    store, backup = tmp_path / "j.db", tmp_path / "backup.db"
    baseline = ["baseline", str(tmp_path / "a.json"), "--journal", str(store)]
    baseline += ["--out", str(tmp_path / "B.json"), "--keyring", str(keyring_path)]
    assert _invoke(*baseline).exit_code == 0
    backup.write_bytes(store.read_bytes())
    assert _invoke(*baseline).exit_code == 0
    store.write_bytes(backup.read_bytes())
    for suffix in ("-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    refused = _invoke(*baseline)
    assert refused.exit_code == 1, refused.output
    assert "does not extend the last checkpoint signed" in refused.output
    with open_journal(store, Keyring.load(keyring_path), create=False) as journal:
        assert len(journal.checkpoints()) == 1


def test_run_takes_the_set_like_show_and_names_a_missing_or_double_set(tmp_path: Path) -> None:
    common = ["--endpoint", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "r")]
    missing = _invoke("run", *common)
    assert missing.exit_code == 2
    assert "no calibration set given" in missing.stderr
    both = _invoke("run", "starter-v1", "--set", "other.jsonl", *common)
    assert both.exit_code == 2
    assert "two calibration sets given" in both.stderr
