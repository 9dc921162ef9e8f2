"""Witness fixtures: real ``refusalkit witness serve`` processes on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from refusalkit.witness import WitnessDir
from support.witnesses import WitnessProcess


@pytest.fixture
def witnesses(tmp_path: Path) -> Iterator[Callable[[str], WitnessProcess]]:
    """``make(name)``: init a witness directory and start its server (killed at the end)."""
    started: list[WitnessProcess] = []

    def make(name: str) -> WitnessProcess:
        directory = tmp_path / name
        WitnessDir.init(directory, f"witness.example/{name}")
        process = WitnessProcess(directory).start()
        started.append(process)
        return process

    yield make
    for process in started:
        process.kill()
