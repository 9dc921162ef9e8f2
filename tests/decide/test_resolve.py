"""``resolve: true``: a path class that also decides on the host's realpath (symbolic links).

Real links on a real filesystem (``tmp_path``): a link inside the workspace to a credential file
is refused by what it points to, whatever it is called; an allow needs both forms to pass. What
it cannot promise (a link made after the decision) is in docs/policy.md, Kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.errors import PolicyError
from refusalkit.model import Action

PackFactory = Callable[..., DecisionPoint]


def classes(*, resolve: bool) -> dict[str, object]:
    return {"p": {"kind": "path", "case_fold": True, "sensitive": True, "resolve": resolve}}


def rules(root: Path) -> list[dict[str, object]]:
    return [
        {
            "id": "secret",
            "effect": "deny",
            "when": {"args.path": {"glob": "**/.env", "class": "p"}},
        },
        {
            "id": "anywhere",
            "effect": "deny",
            "when": {"args.**": {"glob": "**/.env", "class": "p"}},
        },
        {
            "id": "inside",
            "effect": "allow",
            "when": {"args.path": {"prefix": str(root).lower() + "/src/", "class": "p"}},
        },
    ]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path.resolve()
    (root / "src").mkdir()
    (root / ".env").write_text("KEY=1\n")
    (root / "src" / "config.txt").symlink_to(root / ".env")
    (root / "src" / "ok.txt").write_text("fine\n")
    (root / "src" / "out").symlink_to(root)
    return root


def test_a_link_to_a_credential_file_is_refused_by_what_it_points_to(
    dp_for: PackFactory, tree: Path
) -> None:
    dp = dp_for(rules(tree), field_classes=classes(resolve=True))
    decision = dp.decide({"tool": "fs.read", "args": {"path": str(tree / "src" / "config.txt")}})
    assert decision.matched_rule == "secret"
    step = next(s for s in decision.why_trail if s.rule == "secret")
    assert step.detail == "any element: [0] false, [1] true"
    assert dp.decide({"tool": "fs.read", "args": {"path": str(tree / "src/ok.txt")}}).action is (
        Action.ALLOW
    )
    other = {"tool": "x.copy", "args": {"from": str(tree / "src" / "config.txt")}}
    walked = next(s for s in dp.decide(other).why_trail if s.rule == "anywhere")
    assert (walked.matched, walked.field) == (True, "args.from")


def test_without_resolve_the_link_passes(dp_for: PackFactory, tree: Path) -> None:
    dp = dp_for(rules(tree), field_classes=classes(resolve=False))
    decision = dp.decide({"tool": "fs.read", "args": {"path": str(tree / "src" / "config.txt")}})
    assert decision.action is Action.ALLOW


def test_an_allow_needs_both_forms(dp_for: PackFactory, tree: Path) -> None:
    dp = dp_for(rules(tree)[2:], field_classes=classes(resolve=True))
    escaped = {"tool": "fs.read", "args": {"path": str(tree / "src" / "out" / "x.txt")}}
    assert dp.decide(escaped).action is Action.DENY  # the link leads out of src/
    assert dp.decide({"tool": "fs.read", "args": {"path": str(tree / "src/ok.txt")}}).action is (
        Action.ALLOW
    )


def test_resolve_is_a_path_option(tree: Path) -> None:
    base = {"policy": "t", "version": "1"}
    with pytest.raises(PolicyError, match="resolve is an option of kind: path"):
        Pack.from_mapping({**base, "field_classes": {"p": {"resolve": True}}, "rules": []})


def test_list_elements_are_resolved_too(dp_for: PackFactory, tree: Path) -> None:
    rule = {
        "id": "r",
        "effect": "deny",
        "when": {"args.paths[*]": {"glob": "**/.env", "class": "p"}},
    }
    dp = dp_for([rule], field_classes=classes(resolve=True), default="allow")
    paths = [str(tree / "src/ok.txt"), str(tree / "src/config.txt")]
    decision = dp.decide({"tool": "fs.read_multiple_files", "args": {"paths": paths}})
    step = decision.why_trail[0]
    assert (decision.matched_rule, step.field) == ("r", "args.paths[1]")


def test_a_link_made_after_an_earlier_decision_is_followed_in_args_walk(
    dp_for: PackFactory, tree: Path
) -> None:
    """A path once read as a plain file is resolved again at the next decision: the ``**``
    walk's memo (``decide/_probe.py``) keeps no answer for a class that follows links, so a
    file replaced by a link to a credential file is refused by what it now points to."""
    dp = dp_for(rules(tree)[1:2], field_classes=classes(resolve=True), default="allow")
    target = tree / "src" / "later.txt"
    target.write_text("fine\n")
    request = {"tool": "x.copy", "args": {"from": str(target)}}
    assert dp.decide(request).action is Action.ALLOW
    target.unlink()
    target.symlink_to(tree / ".env")
    decision = dp.decide(request)
    assert (decision.action, decision.matched_rule) == (Action.DENY, "anywhere")
