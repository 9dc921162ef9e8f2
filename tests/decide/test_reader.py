"""The pack reader's one pass over the parser's events (``_internal/source.py``) reads every text
as composing it into nodes and building the data from them did
(``tests/support/reference_source.py``): the same data, the same line of every key path, the
same error with the same line, key and hint.

Imports the internal module to drive the parser with Hypothesis below the layer that would hide
its edge cases (CONTRIBUTING.md): ``load_pack`` would stop at the schema.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from refusalkit._internal.source import parse_pack_text
from refusalkit.decide import load_pack
from refusalkit.examples import example_path
from support.reference_source import reference_parse

SCALARS = st.sampled_from(
    ["a", "fs.write", "'**/.env'", "NO", "yes", "on", "0777", "1e3", "1_000", "12", "-3", "1.5",
     "0x1F", "0o17", "~", "null", "", "true", "False", "'q'", '"d"', "'NO'", '"1"', "!!str 1",
     "!!int 2", "!!int x", "!!bool maybe", "!!float 1", "!!null", "!foo x", "! 1", "!!binary aGk=",
     ".nan", ".inf", "-.inf", "&a v", "&b 1", "*a", "2001-12-14", "1:20", "<<", "é", "a b", "-"]
    + ["a", "b", "c", "x.y", "1", "2.5", "'s'"] * 6
)  # fmt: skip
BROKEN = st.sampled_from(["[", "}", "a: b: c", "'unclosed", "\t", "- - [", "? ", "|\n  text"])
KEYS = st.sampled_from(
    ["a", "b", "rules", "id", "1", "NO", "'a'", '"b"', "null", "~", "!!str 1", "!!int 1", "&k c",
     "!!binary aGk=", "!x k", "? [a]", "? {a: 1}", "1.5", "true", "", "*a"]
    + ["a", "b", "c", "d", "e", "f", "g", "h"] * 4
)  # fmt: skip


def _flow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return str(value)


def _block(value: Any, indent: int, flow: bool) -> str:
    pad = " " * indent
    if flow or not isinstance(value, dict | list) or not value:
        return pad + _flow(value) + "\n"
    out = ""
    items = value.items() if isinstance(value, dict) else (("-", v) for v in value)
    for key, item in items:
        head = pad + ("- " if isinstance(value, list) else f"{key}:")
        if key.startswith("? "):
            head = pad + key + "\n" + pad + ":"
        if isinstance(item, dict | list) and item:
            out += head.rstrip() + "\n" + _block(item, indent + 2, flow=False)
        else:
            out += f"{head} {_flow(item)}\n"
    return out


TREES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
RARELY = st.sampled_from([False] * 5 + [True] + [False] * 4)  # Hypothesis favours the ends
EXTRAS = st.sampled_from(["", "---\n", "...\n", "--- x\n", "---\na: 1\n", "# c\n"] + [""] * 10)


@st.composite
def texts(draw: st.DrawFn) -> str:
    """A YAML text: a document in block or flow style, with a few pieces before or after it,
    some lines doubled or duplicated (duplicate keys), nesting deep enough to be refused."""
    tree = draw(TREES)
    flow = draw(st.booleans())
    text = _block(tree, 0, flow=flow)
    lines = text.splitlines(keepends=True)
    if lines and draw(st.booleans()):
        at = draw(st.integers(0, len(lines) - 1))
        lines.insert(at, lines[at])
    if lines and draw(RARELY):
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = lines[at].rstrip("\n") + " " + draw(BROKEN) + "\n"
    if isinstance(tree, dict) and not flow and draw(RARELY):
        depth = draw(st.integers(28, 36))
        lines.append("deep: " + "[" * depth + "x" + "]" * depth + "\n")
    return draw(EXTRAS) + "".join(lines) + draw(EXTRAS)


def _outcome(parse: Any, text: str, json_text: bool) -> Any:
    try:
        data, lines = parse(text, "pack.yaml", hint=None, json_text=json_text)
    except Exception as exc:  # the outcome compared: the error, whatever it is
        fields = ("file", "line", "key", "hint")
        return type(exc).__name__, str(exc), tuple(getattr(exc, name, None) for name in fields)
    return repr(data), sorted(lines.lines.items(), key=repr)


@settings(max_examples=600, deadline=None)
@given(texts(), st.booleans())
@example("a: &x 1\nb: &x 2\n", False)
@example("a: 1\n---\nb: *c\n", False)
@example("a: 1\n---\nb: 2\n", False)
@example("!foo a: 1\n", False)
@example("a: !!int x\nb: *y\n", False)
@example("a: NO\nb: [*y]\n", False)
@example("{[a]: 1, b: !!int c}\n", False)
@example("a: 1e3\nb: 0777\n", True)
@example("a: !!set {x, y}\nb: !!omap [{c: 1}]\nd: !!map {e: !!seq []}\n", False)
@example("- !!python/object/apply:os.system [echo]\n- !!str {}\n", False)
def test_the_one_pass_reading_is_the_composed_reading(text: str, json_text: bool) -> None:
    assert _outcome(parse_pack_text, text, json_text) == _outcome(reference_parse, text, json_text)


def test_the_bundled_packs_read_alike() -> None:
    for name in ("agent-tools.yaml", "mcp-filesystem.yaml", "release-approvals.yaml"):
        text = example_path(name).read_text(encoding="utf-8")
        assert _outcome(parse_pack_text, text, False) == _outcome(reference_parse, text, False)
        assert load_pack(example_path(name)).data == reference_parse(text, name)[0]
