"""Every mistake a new user makes gets a one-line answer that names it, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from refusalkit.cli import app
from refusalkit.cli._common import without_self_reference
from refusalkit.cli._extras import extra_for
from refusalkit.examples import example_path

runner = CliRunner()

# Runs the CLI with one top-level module made unimportable, as on a plain `pip install refusalkit`
# that lacks an extra (a meta-path finder that refuses it, like a missing distribution does).
BLOCKED_RUN = """
import sys
class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] == sys.argv[1]:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
from refusalkit.cli import app
app(sys.argv[2:])
"""


def _run_without(module: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    env.pop("REFUSALKIT_KEYRING", None)
    return subprocess.run(
        [sys.executable, "-c", BLOCKED_RUN, module, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,  # relative paths (keys.json, j.db) land in the test's folder, not the repo's
        timeout=60,
        check=False,
    )


def test_a_missing_extra_is_named_in_one_line(tmp_path: Path) -> None:
    argv = ["serve", "--policy", str(example_path("agent-tools.yaml")), "--journal",
            str(tmp_path / "j.db"), "--insecure-no-auth"]  # fmt: skip
    done = _run_without("fastapi", *argv, home=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith(("error:", "hint:"))]
    assert lines == [
        "error: this needs the optional dependency 'fastapi', which is not installed",
        "hint: Install the 'server' extra: pip install 'refusalkit[server]'",
    ], done.stderr


def test_keys_are_made_without_the_server_extra(tmp_path: Path) -> None:
    """The MCP proxy checks the service's keys: with only the ``mcp`` extra (no FastAPI), the
    keys for it can still be made and listed."""
    keys = str(tmp_path / "keys.json")
    done = _run_without(
        "fastapi", "service", "keys", "add", "ops", "--scopes", "decide", "--keys-file", keys,
        home=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("rk_")
    listed = _run_without("fastapi", "service", "keys", "list", "--keys-file", keys, home=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "ops" in listed.stdout


def test_a_missing_module_of_no_extra_is_not_dressed_up(tmp_path: Path) -> None:
    """Only a module an extra brings is reported as an extra; anything else is a real bug."""
    done = _run_without("refusalkit_nonexistent", "codes", home=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("module", "extra"),
    [
        ("fastapi", "server"),
        ("fastapi.security", "server"),
        ("prometheus_client", "server"),
        ("multipart", "server"),
        ("uvicorn", "server"),
        ("psycopg", "postgres"),
        ("psycopg_pool", "postgres"),
        ("opentelemetry", None),  # the module is opentelemetry; the distribution -api differs
        ("pytest", None),  # a development dependency is never suggested to a user
        ("no_such_module_at_all", None),
    ],
)
def test_extras_are_read_from_the_package_metadata(module: str, extra: str | None) -> None:
    assert extra_for(module) == extra


@pytest.mark.parametrize(
    ("hint", "command", "expected"),
    [
        (
            "Fix the pack, then run `refusalkit policy check PACK`.",
            "refusalkit policy check",
            "Fix the pack.",
        ),
        (
            "Fix the pack, then run `refusalkit policy check PACK`.",
            "refusalkit decide",
            "Fix the pack, then run `refusalkit policy check PACK`.",
        ),
        (
            "Run `refusalkit journal verify STORE` to check the journal.",
            "refusalkit journal verify",
            "",
        ),
        (
            "Check the path; `refusalkit journal append` creates a new journal.",
            "refusalkit journal verify",
            "Check the path; `refusalkit journal append` creates a new journal.",
        ),
        (
            "Restore the state. Or trust it: `refusalkit journal checkpoint STORE --adopt` adopts.",
            "refusalkit journal checkpoint",
            "Restore the state. Or trust it: `refusalkit journal checkpoint STORE --adopt` adopts.",
        ),
        (
            "Use `refusalkit keys rotate PATH` to add a key.",
            "refusalkit keys init",
            "Use `refusalkit keys rotate PATH` to add a key.",
        ),
    ],
)
def test_hints_never_name_the_running_command(hint: str, command: str, expected: str) -> None:
    assert without_self_reference(hint, command) == expected


def test_policy_check_does_not_send_the_user_back_to_policy_check(tmp_path: Path) -> None:
    pack = tmp_path / "bad.yaml"
    pack.write_text("policy: p\nversion: v1\ndefault: deny\nrules: [{id: a, effect: maybe}]\n")
    result = runner.invoke(app, ["policy", "check", str(pack)])
    assert result.exit_code == 2
    assert "error:" in result.stderr
    assert "policy check" not in result.stderr.split("hint:", 1)[1]
    result = runner.invoke(app, ["decide", "--policy", str(pack)], input="")
    assert "then run `refusalkit policy check PACK`" in result.stderr


def test_a_missing_keyring_named_by_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere.json"
    monkeypatch.setenv("REFUSALKIT_KEYRING", str(missing))
    result = runner.invoke(
        app, ["decide", "--policy", str(example_path("agent-tools.yaml"))], input=""
    )
    assert result.exit_code == 2
    assert f"no keyring at {missing}, the file $REFUSALKIT_KEYRING names" in result.stderr
    assert "unset REFUSALKIT_KEYRING" in result.stderr
    assert not missing.exists()
