"""The proxy's own decision path fails: calls are refused ``unavailable``, never forwarded.

The journal's PostgreSQL database is made unavailable mid-session (connections refused, the
proxy's own terminated): a call that would be allowed is refused, retryable, and the upstream
never sees it (its side effect, a file, does not appear).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client

from support.mcp_helpers import python_upstream, refusal, text, wrap_params

pytestmark = [pytest.mark.timeout(120), pytest.mark.postgres]


def _take_down(admin_url: str, database: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (database,),
        )


def test_store_down_mid_session_refuses_unavailable(
    postgres_url: str, postgres_admin_url: str, tmp_path: Path, keyring_path: Path
) -> None:
    before, after = tmp_path / "before.txt", tmp_path / "after.txt"
    database = postgres_url.rsplit("/", 1)[1]

    async def main() -> list[Any]:
        params = wrap_params(
            postgres_url, keyring_path, python_upstream(), extra=["--timeout-ms", "3000"]
        )
        async with Client(params, mode="legacy") as client:
            first = await client.call_tool("touch", {"path": str(before)})
            await anyio.to_thread.run_sync(_take_down, postgres_admin_url, database)
            second = await client.call_tool("touch", {"path": str(after)})
            third = await client.call_tool("echo", {"text": "still refused"})
            return [first, second, third]

    first, second, third = anyio.run(main)
    assert text(first) == f"touched {before}"
    for result in (second, third):
        assert text(result).startswith("refused (unavailable by @unavailable, retryable: yes): ")
        meta = refusal(result)
        assert meta["journal_index"] is None  # the store could not take it
        assert meta["decision"]["reason_code"] == "unavailable"
        assert meta["decision"]["retryable"] is True
        assert database not in json.dumps(meta)  # the store's name or URL never reaches the model
    assert before.exists()
    assert not after.exists()  # never forwarded
