"""The gate in-process, over a real SQLite journal: mapping, journaling, failing closed."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import anyio
import pytest

from refusalkit.decide import DecisionPoint, load_pack
from refusalkit.keyring import Keyring
from refusalkit.mcp_proxy import Caller, Gate, Verdict, open_gate
from support.mcp_helpers import PACK

CALLER = Caller(agent="tester", session="s-1", token="a.b.c")


def _decide(journal: Path, keyring: Keyring, *calls: tuple[object, object]) -> list[Verdict]:
    point = DecisionPoint(load_pack(PACK), keyring)

    async def main() -> list[Verdict]:
        async with open_gate(point, str(journal), keyring, server_name="py", timeout_s=0.5) as g:
            return [await g.decide(tool, args, CALLER) for tool, args in calls]

    return anyio.run(main)


def test_request_mapping(keyring: Keyring) -> None:
    gate = Gate(DecisionPoint(load_pack(PACK), keyring), None, keyring, server_name="py")  # type: ignore[arg-type]
    assert gate.request("read_file", {"path": "/a"}, CALLER) == {
        "tool": "py.read_file",
        "args": {"path": "/a"},
        "caller": {"agent": "tester", "session": "s-1", "token": "a.b.c"},
    }
    assert gate.request("echo", None, Caller(None, "s-2"))["args"] == {}
    assert gate.request("echo", None, Caller(None, "s-2"))["caller"] == {"session": "s-2"}


@pytest.mark.parametrize(
    ("tool", "args"),
    [(None, {}), (["echo"], {}), ("echo", ["not", "an", "object"]), ("echo", "text")],
)
def test_malformed_calls_are_rejected_by_the_request_stage(
    tmp_path: Path, keyring: Keyring, tool: object, args: object
) -> None:
    """A malformed call is the decision point's malformed request: deny + input-rejected by
    @request, journaled (not the proxy's own failure, which is unavailable)."""
    [verdict] = _decide(tmp_path / "j.db", keyring, (tool, args))
    assert verdict.refused
    assert verdict.journal_index is not None
    assert verdict.decision.action.value == "deny"
    assert verdict.decision.reason_code is not None
    assert verdict.decision.reason_code.value == "input-rejected"
    assert verdict.decision.matched_rule == "@request"


Call = tuple[str, object]


def _locked_while(
    journal: Path, keyring: Keyring, locked: list[Call], after: tuple[Call, ...] = ()
) -> list[Verdict]:
    """Decide ``locked`` while another connection holds the store's write lock, then ``after``."""
    point = DecisionPoint(load_pack(PACK), keyring)

    async def main() -> list[Verdict]:
        async with open_gate(point, str(journal), keyring, server_name="py", timeout_s=0.5) as g:
            holder = sqlite3.connect(journal, isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")
            try:
                verdicts = [await g.decide(tool, args, CALLER) for tool, args in locked]
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            return verdicts + [await g.decide(tool, args, CALLER) for tool, args in after]

    return anyio.run(main)


def test_a_locked_journal_times_out_into_unavailable(tmp_path: Path, keyring: Keyring) -> None:
    [verdict] = _locked_while(tmp_path / "j.db", keyring, [("echo", {"text": "allowed"})])
    assert verdict.refused  # allowed by the pack, but not journaled in time: refused
    assert verdict.journal_index is None
    assert verdict.decision.matched_rule == "@unavailable"
    assert verdict.decision.retryable


def test_a_block_holds_even_when_its_journaling_fails(tmp_path: Path, keyring: Keyring) -> None:
    rm, echo = ("run", {"command": "rm -rf /"}), ("echo", {"text": "hi"})
    first, later = _locked_while(tmp_path / "j.db", keyring, [rm], after=(echo,))
    assert first.decision.reason_code is not None
    assert first.decision.reason_code.value == "unavailable"
    assert later.refused
    assert (later.decision.action.value, later.decision.matched_rule) == (
        "block",
        "destructive_shell",
    )


def test_shadow_report_lines_cannot_be_forged_by_a_tool_name(
    tmp_path: Path, keyring: Keyring
) -> None:
    report = io.StringIO()
    point = DecisionPoint(load_pack(PACK), keyring)
    forged = "read_file\nrefusalkit shadow: all clear\x1b[2J"

    async def main() -> Verdict:
        async with open_gate(
            point, str(tmp_path / "j.db"), keyring, server_name="py", shadow=True, report=report
        ) as gate:
            return await gate.decide(forged, {"path": "/a/.env"}, CALLER)

    verdict = anyio.run(main)
    assert not verdict.refused  # shadow: forwarded
    [line] = report.getvalue().splitlines()
    assert "\\n" in line
    assert "\\x1b" in line
    assert "\x1b" not in line
