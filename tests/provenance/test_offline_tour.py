"""The drift tour of the README and docs/provenance.md, run offline as printed: serve-replay
--demo, a run, a receipted baseline, a second run, and a drift verdict (exit 3)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REFUSALKIT = str(Path(sys.executable).with_name("refusalkit"))  # the installed console script


def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [REFUSALKIT, "calibrate", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def replay(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    env = {**os.environ, "HOME": str(tmp_path), "REFUSALKIT_KEYRING": str(tmp_path / "k.json")}
    server = subprocess.Popen(
        [REFUSALKIT, "calibrate", "serve-replay", "--demo", "--port", "0"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
        assert found, line + (server.stderr.read() if server.stderr else "")
        yield found.group(0), env
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_drift_tour_runs_offline_as_printed(
    tmp_path: Path, replay: tuple[str, dict[str, str]]
) -> None:
    url, env = replay
    subprocess.run(
        [REFUSALKIT, "keys", "init", env["REFUSALKIT_KEYRING"]],
        env=env, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    steps = [
        ("run", "starter-v1", "--endpoint", url, "--model", "demo-v1", "--out", "run.json"),
        ("baseline", "run.json", "--journal", "decisions.db", "--out", "baseline.json"),
        ("run", "starter-v1", "--endpoint", url, "--model", "demo-v2", "--out", "run-today.json"),
    ]
    for step in steps:
        done = _cli(*step, cwd=tmp_path, env=env)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    drift = _cli(
        "drift", "run-today.json", "--baseline", "baseline.json", "--html", "drift.html",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert drift.returncode == 3, drift.stdout + drift.stderr
    assert "verdict: more-restrictive" in drift.stdout
    assert (tmp_path / "drift.html").read_text().startswith("<!DOCTYPE html>")
    same = _cli("drift", "run.json", "--baseline", "baseline.json", cwd=tmp_path, env=env)
    assert same.returncode == 0, same.stdout + same.stderr
