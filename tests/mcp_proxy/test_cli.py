"""``refusalkit mcp``: bad usage is a one-line error and a hint, never a traceback."""

from __future__ import annotations

import subprocess
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
