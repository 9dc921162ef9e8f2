"""Every ``>>>`` example in a docstring under src/refusalkit runs and prints what it shows.

The modules are imported by their package names (``refusalkit.decide``, not a file path), so an
example sees exactly the objects a user gets.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import refusalkit


def _modules() -> list[str]:
    names = ["refusalkit"]
    names += [m.name for m in pkgutil.walk_packages(refusalkit.__path__, "refusalkit.")]
    return sorted(names)


def _with_examples() -> list[str]:
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for name in _modules():
        module = importlib.import_module(name)
        if any(test.examples for test in finder.find(module, name)):
            found.append(name)
    return found


WITH_EXAMPLES = _with_examples()


def test_examples_are_found() -> None:
    assert {"refusalkit.decide", "refusalkit.model._canonical", "refusalkit.redact"} <= set(
        WITH_EXAMPLES
    )


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
