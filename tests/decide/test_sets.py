"""Named sets (``sets:`` and ``{set: NAME}``), ``under`` and the bare tool glob (docs/policy.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from refusalkit.decide import DecisionPoint, Pack
from refusalkit.decide._conditions import FALSE, TRUE, compile_condition
from refusalkit.errors import PolicyError
from refusalkit.model import Action

PackFactory = Callable[..., DecisionPoint]
CLASSES = {"p": {"kind": "path", "case_fold": True, "sensitive": True}}
SETS = {
    "secrets": {"values": ["**/.env", "**/*.tfstate"], "source": "test", "description": "d"},
    "dirs": ["**/.aws", "/etc"],
}


def pack(rules: list[dict[str, Any]], **extra: Any) -> Pack:
    return Pack.from_mapping({"policy": "t", "version": "1", "rules": rules, **extra})


def deny(**when: Any) -> dict[str, Any]:
    return {"id": "d", "effect": "deny", "when": when}


def test_a_set_is_its_values_in_place(dp_for: PackFactory) -> None:
    rule = deny(**{"args.path": {"glob": [{"set": "secrets"}, "**/.netrc"], "class": "p"}})
    dp = dp_for([rule], field_classes=CLASSES, sets=SETS, default="allow")
    for path in ["/w/.env", "/w/a/B.TFSTATE", "/w/.netrc"]:
        assert dp.decide({"tool": "t", "args": {"path": path}}).matched_rule == "d"
    decision = dp.decide({"tool": "t", "args": {"path": "/w/a.py"}})
    assert decision.action is Action.ALLOW
    assert decision.why_trail[0].test == "glob set secrets"
    hit = dp.decide({"tool": "t", "args": {"path": "/w/x.tfstate"}}).why_trail[0]
    assert hit.test == "glob **/*.tfstate"


def test_a_set_under_not_and_in(dp_for: PackFactory) -> None:
    sets = {"tools": ["fs.read", "fs.list"], **SETS}
    rule = deny(tool={"not": {"in": {"set": "tools"}}})
    dp = dp_for([rule], sets=sets, default="allow")
    assert dp.decide({"tool": "fs.read"}).action is Action.ALLOW
    assert dp.decide({"tool": "fs.write"}).matched_rule == "d"


def test_an_unknown_set_is_a_load_error_naming_the_declared_ones() -> None:
    rule = deny(**{"args.path": {"glob": {"set": "secret"}}})
    with pytest.raises(PolicyError, match="no set named 'secret'") as caught:
        pack([rule], sets=SETS)
    assert "dirs, secrets" in str(caught.value)


def test_a_set_reference_has_one_key() -> None:
    rule = deny(**{"args.path": {"glob": {"set": "secrets", "extra": 1}}})
    with pytest.raises(PolicyError):
        pack([rule], sets=SETS)


@pytest.mark.parametrize(
    ("value", "alternative"),
    [("/h/.aws", 0), ("/h/.aws/credentials", 0), ("/h/.awsx", None), ("/etc", 1), ("/etcx", None)],
)
def test_under_matches_a_directory_and_everything_under_it(
    value: str, alternative: int | None
) -> None:
    cond = compile_condition({"under": ["**/.aws", "/etc"]})
    assert cond.which(value) == alternative
    assert cond.check(value) is (FALSE if alternative is None else TRUE)


def test_under_refuses_a_trailing_slash() -> None:
    with pytest.raises(PolicyError, match="trailing"):
        pack([deny(**{"args.path": {"under": "/etc/"}})])


def test_under_with_case_fold_wants_lower_case() -> None:
    with pytest.raises(PolicyError, match="upper-case"):
        pack([deny(**{"args.path": {"under": "**/.AWS", "class": "p"}})], field_classes=CLASSES)


@pytest.mark.parametrize("n", [1, 3, 4, 9])
def test_many_alternatives_decide_as_one_by_one(n: int) -> None:
    items = [f"(^|/)f{i}$" for i in range(n)]
    cond = compile_condition({"regex": items})
    for i in range(n):
        assert (cond.check(f"/a/f{i}"), cond.which(f"/a/f{i}")) == (TRUE, i)
    assert (cond.check("/a/f"), cond.which("/a/f")) == (FALSE, None)
    globs = compile_condition({"glob": [f"**/g{i}" for i in range(n)]})
    assert (globs.check(f"/x/g{n - 1}"), globs.which(f"/x/g{n - 1}")) == (TRUE, n - 1)
    assert (globs.check("/x/g"), globs.which("/x/g")) == (FALSE, None)


def test_a_bare_tool_glob_is_a_load_error_naming_the_fix() -> None:
    with pytest.raises(PolicyError, match="compared literally") as caught:
        pack([deny(tool="files.*")])
    assert '{glob: "files.*"}' in str(caught.value.hint)
    pack([deny(tool={"glob": "files.*"})])  # the fix loads
