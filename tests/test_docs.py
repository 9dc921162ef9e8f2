"""Every ```python block in docs/ runs, so the examples users copy keep working.

Blocks of one page run in order in one namespace, in a fresh temporary directory. A block fenced
```python no-run is shown but not run (a running server or network endpoint, say).
"""

from __future__ import annotations

import asyncio
import re
import warnings
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
# quickstart.md is a console tour: tests/test_tour.py runs its commands as printed.
TOURS = {"quickstart.md"}
PAGES = sorted(page for page in DOCS.glob("*.md") if page.name not in TOURS)


def python_blocks(page: Path) -> list[tuple[int, str]]:
    """(line number, code) of the runnable python blocks of a page."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        if "no-run" in match.group(1):
            continue
        blocks.append((text.count("\n", 0, match.start()) + 2, match.group(2)))
    return blocks


def test_every_part_has_a_docs_page() -> None:
    names = {page.stem for page in PAGES}
    assert {"decision", "policy", "journal", "chat", "provenance", "service"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_blocks(page)
    assert blocks, f"{page.name} has no runnable python example"
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    try:
        for line, code in blocks:
            compiled = compile(code, f"{page.name}:{line}", "exec")
            exec(compiled, namespace)  # the docs' own examples, by design
    finally:
        _close_the_loop_left_behind()


def _close_the_loop_left_behind() -> None:
    """A framework's ``run_sync`` in a page's example leaves its event loop as the thread's
    current loop. Close it here: dropped later by another test's ``asyncio.run``, its
    self-pipe sockets would be reported by the collector during that unrelated test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.close()
    asyncio.set_event_loop(None)


NPX = re.compile(r"""npx["',\s]+-y["',\s]+(@?[\w./-]+(?:@[\w.-]+)?)""")
CI_FS_SERVER = re.compile(r"@modelcontextprotocol/server-filesystem@[\w.-]+")


def test_mcp_configs_pin_the_server_versions_they_name() -> None:
    """Every `npx -y PACKAGE` in the docs pins PACKAGE@VERSION, the version .ci/run tests and the
    MCP tests' skip reason names: an unpinned npx runs whatever was published last."""
    root = DOCS.parent
    tested = set(CI_FS_SERVER.findall((root / ".ci" / "run").read_text(encoding="utf-8")))
    assert len(tested) == 1
    conftest = (root / "tests" / "mcp_proxy" / "conftest.py").read_text(encoding="utf-8")
    assert tested == set(CI_FS_SERVER.findall(conftest))
    found = 0
    for page in [root / "README.md", *DOCS.glob("*.md")]:
        for name in NPX.findall(page.read_text(encoding="utf-8")):
            found += 1
            assert "@" in name.lstrip("@"), f"{page.name}: npx -y {name} names no version"
            if name.startswith("@modelcontextprotocol/server-filesystem"):
                assert {name} == tested, f"{page.name}: {name}, but .ci/run tests {tested}"
    assert found >= 4
