"""Mapping files: validated on load, errors name file, line and key (docs/design/engines.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refusalkit.engines import EngineMapping, load_mapping
from refusalkit.engines._mapping import MISSING, lookup
from refusalkit.errors import PolicyError

Write = Callable[[str, str], Path]


def test_a_full_mapping_loads(write: Write) -> None:
    mapping = load_mapping(
        write(
            "m.yaml",
            """\
principal: {type: User, id: caller.user}
action: {type: Action, id: tool}
resource: {type: Tool, id: tool}
input: {file: args.path, "*": args}
classes: {args.path: file-path}
reveal: [args.host]
policy: {id: guard, version: "7"}
""",
        )
    )
    request = {"tool": "t", "args": {"path": "/a", "n": 1}, "caller": {"user": "bob"}}
    assert mapping.engine_input(request) == {"file": "/a", "path": "/a", "n": 1}
    assert [e.type for e in mapping.entities] == ["User", "Action", "Tool"]
    assert mapping.request_path("file") == "args.path"
    assert mapping.request_path("n") == "args.n"  # through the spread
    assert mapping.field_class("args.path") == "file-path"
    assert mapping.field_class("args.other") == "unclassified"
    assert mapping.reveal == {"tool", "args.host"}
    assert (mapping.policy_id, mapping.policy_version) == ("guard", "7")


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("input: args\nbogus: 1\n", 2, "unknown key 'bogus'"),
        ("input: 3\n", 1, "input must be a request path or a mapping"),
        ("input:\n  file: args..path\n", 2, "not a dotted request path"),
        ("principal: {type: User}\n", 1, "principal must be {type: TYPE, id: REQUEST-PATH}"),
        ("classes:\n  args.path: [x]\n", 2, "a field class must be a non-empty string"),
        ("reveal: args.host\n", 1, "reveal must be a list"),
        ("policy:\n  owner: me\n", 1, "policy must be {id: NAME, version: LABEL}"),
        ("input: args\ninput: caller\n", 2, "duplicate key"),
        ("input: [args\n", 2, "not valid YAML/JSON"),
        ("- input\n", 1, "a mapping file must be a YAML mapping"),
    ],
)
def test_errors_name_file_line_and_key(write: Write, text: str, line: int, problem: str) -> None:
    path = write("m.yaml", text)
    with pytest.raises(PolicyError) as info:
        load_mapping(path)
    assert problem in info.value.message
    assert (info.value.file, info.value.line) == (str(path), line)
    assert "docs/design/engines.md" in info.value.hint


def test_a_missing_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="no such file"):
        load_mapping(tmp_path / "absent.yaml")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(request=st.dictionaries(st.text(max_size=3), json_values, max_size=4),
       path=st.lists(st.text(min_size=1, max_size=3), max_size=3))  # fmt: skip
def test_lookup_never_raises_and_finds_what_is_there(request: dict, path: list[str]) -> None:
    value = lookup(request, tuple(path))
    cursor = request
    for part in path:
        if not isinstance(cursor, dict) or part not in cursor:
            assert value is MISSING
            return
        cursor = cursor[part]
    assert value is cursor
    assert EngineMapping(whole=tuple(path)).engine_input(request) == (
        {} if value is MISSING else value
    )
