"""docs/approvals.md's console blocks run as printed (the parser and checker of test_tour), with
this checkout's ``refusalkit`` in a fresh directory and a fresh HOME."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_tour import _check, _script, parse_steps

ROOT = Path(__file__).resolve().parents[2]
PAGE = "docs/approvals.md"


def test_the_approvals_page_runs_as_printed(tmp_path: Path) -> None:
    steps = parse_steps((ROOT / PAGE).read_text(encoding="utf-8"))
    assert len(steps) >= 10
    work, home, out = tmp_path / "work", tmp_path / "home", tmp_path / "out"
    for folder in (work, home, out):
        folder.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(home),
           "LANG": "C.UTF-8", "COLUMNS": "200"}  # fmt: skip
    tour = [(PAGE, steps)]
    subprocess.run(["bash", "-c", _script(tour, out)], cwd=work, env=env, timeout=300, check=False)
    _check(tour, out)
