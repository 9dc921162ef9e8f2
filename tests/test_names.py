"""One meaning per name (docs/design/architecture.md, Names).

A name that two public modules export is one object; no internal module defines, under a public
name, something else; a renamed public name still imports, with a ``DeprecationWarning``, as the
object it became; and "checkpoint" alone is the journal's signed tree head, never a SQLite WAL
checkpoint.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

import refusalkit
from test_public_api import PUBLIC

SRC = Path(refusalkit.__file__).resolve().parent
ROOT = SRC.parent.parent

# Internal definitions that share a public name and its meaning (one concept, two spellings of
# the same type): each says why it is not a second meaning.
SAME_MEANING: dict[tuple[str, str], str] = {
    ("refusalkit.journal._schedule", "ProofSource"): (
        "the same ``(old, new) -> consistency proof`` callable type as the witness client's; "
        "the journal cannot import the witness, which imports it"
    ),
    ("refusalkit.server._verify_job", "main"): "a process's entry point, as ``cli.main`` is",
}


def exported() -> dict[str, dict[str, object]]:
    """Public name -> {public module: the object it exports under that name}."""
    found: dict[str, dict[str, object]] = defaultdict(dict)
    for module_name, names in PUBLIC.items():
        module = importlib.import_module(module_name)
        for name in names:
            found[name][module_name] = getattr(module, name)
    return found


def test_a_name_two_public_modules_export_is_one_object() -> None:
    twice = {
        name: sorted(owners)
        for name, owners in exported().items()
        if len({id(obj) for obj in owners.values()}) > 1
    }
    assert twice == {}, "rename one meaning, and alias the old name (src/refusalkit/_deprecated.py)"


def top_level_names(path: Path) -> Iterator[str]:
    """The public names a module defines at top level (classes, functions, assignments)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        elif isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))


def module_of(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_internal_definition_reuses_a_public_name_for_something_else() -> None:
    public = exported()
    reused = []
    for path in sorted(SRC.rglob("*.py")):
        module_name = module_of(path)
        for name in {n for n in top_level_names(path) if n in public and not n.startswith("_")}:
            if (module_name, name) in SAME_MEANING:
                continue
            obj = getattr(importlib.import_module(module_name), name)
            if all(obj is not other for other in public[name].values()):
                reused.append(f"{module_name}.{name}")
    assert reused == []


def test_every_same_meaning_exception_still_occurs() -> None:
    for module_name, name in SAME_MEANING:
        assert hasattr(importlib.import_module(module_name), name), "remove the entry"


# (package, old name, new name): renamed so that each name has one meaning (CHANGELOG.md).
RENAMED = [
    ("refusalkit.mcp_proxy", "Verdict", "GateOutcome"),
    ("refusalkit.integrations", "Caller", "CallerSource"),
    ("refusalkit.witness", "Answer", "HttpAnswer"),
]


@pytest.mark.parametrize(("package", "old", "new"), RENAMED)
def test_a_renamed_name_still_imports_with_a_warning(package: str, old: str, new: str) -> None:
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"{package}\.{old} is deprecated .*\.{new}\)"):
        exec(f"from {package} import {old}", namespace)  # the import statement itself
    assert namespace[old] is getattr(importlib.import_module(package), new)
    assert old not in importlib.import_module(package).__all__


@pytest.mark.parametrize(("package", "old", "new"), RENAMED)
def test_the_old_name_now_means_only_the_kept_meaning(package: str, old: str, new: str) -> None:
    owners = exported().get(old, {})
    assert package not in owners
    assert all(obj is not getattr(importlib.import_module(package), new) for obj in owners.values())


# --- "checkpoint" ------------------------------------------------------------------------------

BARE_CHECKPOINT = re.compile(r"(?<![\w`/-])[Cc]heckpoint(?:s|ed)?\b")
ABOUT_WAL = re.compile(r"\bWAL\b|wal_|PASSIVE|max_wal_size")
WAL_NEAR = 24  # characters either side within which "WAL" qualifies the word


def prose(path: Path) -> str:
    """A file's prose: a page without its code blocks; a module's comments and docstrings."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return re.sub(r"```.*?```", " ", text, flags=re.DOTALL)
    parts = [
        tok.string.strip("#\"' \n").rstrip(".") + "."
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and '"""' in tok.string)
    ]
    return " ".join(parts)


def bare_wal_checkpoints(text: str) -> list[str]:
    """Sentences about the WAL that call a WAL checkpoint a bare "checkpoint"."""
    found = []
    for sentence in re.split(r"(?<=[.;!?])\s+", re.sub(r"\s+", " ", text)):
        if not ABOUT_WAL.search(sentence):
            continue
        for match in BARE_CHECKPOINT.finditer(sentence):
            near = sentence[max(0, match.start() - WAL_NEAR) : match.end() + WAL_NEAR]
            if "WAL" not in near:
                found.append(sentence)
    return found


def test_the_word_rule_itself() -> None:
    assert bare_wal_checkpoints(
        "The writer runs the WAL checkpoints itself between groups: a checkpoint on a second "
        "connection would overlap the appends."
    )
    assert not bare_wal_checkpoints("WAL checkpoints run between groups, every 2 MiB.")
    assert not bare_wal_checkpoints("The service signs a checkpoint every minute.")
    assert not bare_wal_checkpoints("every WAL frame was checkpointed.")


def test_a_wal_checkpoint_is_never_a_bare_checkpoint() -> None:
    """The journal's signed tree head is "a checkpoint" (C2SP tlog-checkpoint); SQLite's and
    PostgreSQL's copying of the WAL back into the database is always "a WAL checkpoint"."""
    paths = [*SRC.rglob("*.py"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "tests").glob("*/*.py")]
    found = {str(p.relative_to(ROOT)): s for p in paths for s in bare_wal_checkpoints(prose(p))}
    assert found == {}
