"""Fixtures for the provenance tests: XSTest as a calibration set and as a replayed model."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from refusalkit.provenance import (
    CalibrationSet,
    import_xstest,
)
from support.openai_server import OpenAIServer


@pytest.fixture(scope="session")
def xstest_set(vectors: Path) -> CalibrationSet:
    """The 450 XSTest prompts as a calibration set."""
    return import_xstest(vectors / "xstest" / "xstest_prompts.csv")


@pytest.fixture(scope="session")
def gpt4_rows(vectors: Path) -> list[dict[str, str]]:
    """The labelled GPT-4 completions of XSTest v2 (450 rows)."""
    with (vectors / "xstest" / "xstest_v2_completions_gpt4.csv").open(
        encoding="utf-8", newline=""
    ) as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="session")
def gpt4_by_prompt(xstest_set: CalibrationSet, gpt4_rows: list[dict[str, str]]) -> dict[str, str]:
    """Prompt text (as in the set) → GPT-4's recorded completion, joined by XSTest id."""
    by_id = {row["id"].removeprefix("v2-"): row["completion"] for row in gpt4_rows}
    return {p.prompt: by_id[p.id.removeprefix("xstest-")] for p in xstest_set}


@pytest.fixture(scope="session")
def gpt4_refused(xstest_set: CalibrationSet, gpt4_rows: list[dict[str, str]]) -> dict[str, bool]:
    """Set id → the human label (full or partial refusal = True)."""
    labels = {
        row["id"].removeprefix("v2-"): row["final_label"] != "1_full_compliance"
        for row in gpt4_rows
    }
    return {p.id: labels[p.id.removeprefix("xstest-")] for p in xstest_set}


def prompt_of(body: dict[str, Any]) -> str:
    """The user prompt of a chat-completions request body."""
    return str(body["messages"][-1]["content"])


@pytest.fixture
def replay_server(gpt4_by_prompt: dict[str, str]) -> Iterator[OpenAIServer]:
    """A loopback OpenAI-compatible server replaying GPT-4's real XSTest answers."""
    with OpenAIServer(lambda body: gpt4_by_prompt[prompt_of(body)]) as server:
        yield server


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    """A fresh response cache file."""
    return tmp_path / "cache.sqlite3"
