"""Hypothesis strategies shared by the tests: JSON values, from plain records to odd inputs.

One builder, ``json_values``, makes every JSON-shaped strategy; a test narrows it with its own
scalars and keys (a condition test draws from a few paths, the canonical-JSON test from keys that
sort differently in UTF-16). ``plain_json`` is what the fast RFC 8785 path accepts; ``any_json``
adds floats and every string.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["SAFE_INTEGERS", "any_json", "json_values", "plain_json", "plain_scalars"]

SAFE_INTEGERS = st.integers(-(2**53) + 1, 2**53 - 1)
"""Integers that RFC 8785 §3.2.2.3 can write exactly (IEEE 754 doubles)."""

plain_scalars = st.none() | st.booleans() | SAFE_INTEGERS | st.text()


def json_values(
    scalars: st.SearchStrategy[Any],
    *,
    keys: st.SearchStrategy[Any] | None = None,
    max_size: int = 5,
    max_leaves: int = 30,
) -> st.SearchStrategy[Any]:
    """Scalars, lists and objects nested up to ``max_leaves`` leaves; object keys from ``keys``
    (short text by default)."""
    names = st.text(max_size=8) if keys is None else keys
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=max_size) | st.dictionaries(names, inner, max_size=max_size)
        ),
        max_leaves=max_leaves,
    )


plain_json = json_values(plain_scalars)
"""Exact dict/list/str/bool/None and safe integers: the values the fast RFC 8785 path takes."""

any_json = json_values(plain_scalars | st.floats(allow_nan=False, allow_infinity=False))
"""Any JSON value Python's ``json`` can write, floats included."""
