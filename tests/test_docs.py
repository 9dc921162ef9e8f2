"""Every ```python block in docs/ runs, so the examples users copy keep working.

Blocks of one page run in order in one namespace, in a fresh temporary directory. A block fenced
```python no-run is shown but not run (a running server or network endpoint, say).
"""

from __future__ import annotations

import re
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
    for line, code in blocks:
        compiled = compile(code, f"{page.name}:{line}", "exec")
        exec(compiled, namespace)  # the docs' own examples, by design
