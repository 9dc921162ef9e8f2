"""The repository is self-contained: every citation points inside it (docs/design/README.md).

No file cites the old contract file outside the repository, a path into the workspace around
it, or an issue number: a reader who has only the repository must be able to follow every
reference.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = [
    "src",
    "tests",
    "docs",
    "bench",
    "examples",
    "README.md",
    "CONTRIBUTING.md",
    "CHANGELOG.md",
    "pyproject.toml",
    ".ci",
]
SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".json", ".txt", ".html", ".cfg", ".ini", ""}
# Spelled in pieces so that this file does not match itself.
OUTSIDE = re.compile(
    "|".join(
        [
            "DESIGN" + r"\.md",
            r"\.\./" + "shared",
            r"\bissues?\s+#?\d+",
            r"\bissue\s*#\d+",
        ]
    ),
    re.IGNORECASE,
)


def checked_files() -> list[Path]:
    """Text files a reader of the repository reads (third-party vectors and hidden, untracked
    directories such as a benchmark's private venv excluded; our own JSON, such as the schemas
    and the safety pack, included)."""
    out: list[Path] = []
    for name in CHECKED:
        base = ROOT / name
        if base.is_file():
            out.append(base)
        elif base.is_dir():
            out += [
                p
                for p in base.rglob("*")
                if p.is_file()
                and p.suffix in SUFFIXES
                and not {"vectors", "__pycache__", "results"} & set(p.parts)
                and not any(part.startswith(".") for part in p.relative_to(base).parts)
            ]
    return sorted(out)


def _third_party(path: Path) -> bool:
    """Published vectors and data sets, copied unmodified (each directory under tests/vectors)."""
    parts = path.relative_to(ROOT).parts
    return parts[:2] == ("tests", "vectors") and len(parts) > 3


def citations(text: str) -> list[str]:
    """Lines citing something outside the repository."""
    return [line.strip() for line in text.splitlines() if OUTSIDE.search(line)]


def test_the_pattern_catches_each_kind() -> None:
    for line in (
        "see DESIGN" + ".md §2",
        "copied from ../" + "shared/data",
        "(issue" + " 6)",
        "Issue" + " #12",
        "issues" + " 3 and 4",
    ):
        assert citations(line), line
    assert not citations("docs/design/policy.md (Conditions); an issue with numbers like 6")


@pytest.mark.parametrize("path", checked_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_leaves_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert citations(text) == [], f"{path.relative_to(ROOT)} cites outside the repository"


def test_design_pages_exist_for_every_part() -> None:
    pages = {p.stem for p in (ROOT / "docs" / "design").glob("*.md")}
    assert {
        "README",
        "architecture",
        "decision",
        "policy",
        "journal",
        "chat",
        "provenance",
        "service",
    } <= pages


def test_design_links_resolve() -> None:
    """Every relative Markdown link in docs/ and README.md names a file that exists."""
    link = re.compile(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)")
    broken = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        targets = link.findall(page.read_text(encoding="utf-8"))
        broken += [
            f"{page.relative_to(ROOT)} -> {t}" for t in targets if not (page.parent / t).is_file()
        ]
    assert broken == []
