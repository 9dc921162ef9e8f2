"""``refusalkit mcp``: bad usage is a one-line error and a hint, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from support.mcp_helpers import PACK, REFUSALKIT


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["wrap", "--policy", str(PACK), "--journal", "{j}", "--", "/no/such/server"],
         "cannot run the server command '/no/such/server'"),
        (["wrap", "--policy", "/no/pack.yaml", "--journal", "{j}", "--", "true"],
         "no such file"),
        (["proxy", "--upstream", "http://127.0.0.1:1/mcp", "--policy", str(PACK),
          "--journal", "{j}"], "give exactly one of --keys-file and --insecure-no-auth"),
        (["wrap", "--policy", str(PACK), "--journal", "{j}", "--results", "scrub", "--", "true"],
         "--results must be redact, block or off"),
        (["wrap", "--policy", str(PACK), "--journal", "{j}", "--pin", str(PACK), "--", "true"],
         "cannot read the pin file"),
    ],
)  # fmt: skip
def test_bad_usage_is_an_error_with_a_hint(tmp_path: Path, args: list[str], says: str) -> None:
    journal = str(tmp_path / "j.db")
    done = subprocess.run(
        [REFUSALKIT, "mcp", *(a.replace("{j}", journal) for a in args)],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert says in done.stderr
    assert "hint:" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_agent_the_pack_does_not_list_is_warned_at_start(tmp_path: Path) -> None:
    """The warning comes before the server starts; the wrapper is stopped once it is seen."""
    process = subprocess.Popen(
        [REFUSALKIT, "mcp", "wrap", "--policy", str(PACK), "--journal", str(tmp_path / "j.db"),
         "--agent", "testr", "--server-name", "py", "--", "cat"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if "session" in line:  # the start line comes after the warning
                break
    finally:
        process.kill()
        process.wait()
    said = "".join(lines)
    assert "warning: the pack's capabilities do not list 'testr'" in said
    assert "no tool of the server 'py' is granted" in said


@pytest.mark.parametrize("server", [["cat"], [sys.executable, "-c", "pass"]])
def test_a_client_input_that_is_a_file_ends_the_wrapper_at_its_end(
    tmp_path: Path, server: list[str]
) -> None:
    """Stdin that is not a pipe (a file, /dev/null) goes through the SDK's stdio server, whose
    writer task ends only when its stream is closed: the wrapper hung after the input's end."""
    done = subprocess.run(
        [REFUSALKIT, "mcp", "wrap", "--policy", str(PACK), "--journal", str(tmp_path / "j.db"),
         "--", *server],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
