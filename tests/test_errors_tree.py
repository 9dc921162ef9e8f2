"""One exception tree: every public exception is a ``RefusalkitError`` and is drawn in errors.py.

The drawing in ``refusalkit.errors``'s docstring is read as a tree (its indentation gives each
class's parent) and checked against the classes themselves, so it can neither leave an error out
nor put one under the wrong parent.
"""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

import refusalkit.errors
from refusalkit.errors import RefusalkitError
from test_public_api import PUBLIC

BRANCH = re.compile(r"^ {4}(?P<prefix>[│ ]*)(?:├── |└── )(?P<name>\w+)")


def drawn_tree() -> dict[str, str]:
    """``class name -> parent name`` as the docstring draws it."""
    parents: dict[str, str] = {}
    stack = ["RefusalkitError"]
    for line in (refusalkit.errors.__doc__ or "").splitlines():
        match = BRANCH.match(line)
        if match is None:
            continue
        depth = len(match["prefix"]) // 4 + 1
        del stack[depth:]
        parents[match["name"]] = stack[depth - 1]
        stack.append(match["name"])
    return parents


def public_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module_name in PUBLIC:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and issubclass(value, BaseException):
                found[name] = value
    return found


def test_the_walk_finds_errors_outside_errors_py() -> None:
    assert {"ToolBlockedError", "EquivocationError", "AdapterFailure"} <= set(public_exceptions())


@pytest.mark.parametrize("name", sorted(public_exceptions()))
def test_every_public_exception_is_in_the_tree(name: str) -> None:
    cls = public_exceptions()[name]
    assert issubclass(cls, RefusalkitError), f"{name} is not a RefusalkitError"
    assert name in drawn_tree() or cls is RefusalkitError, f"{name} is not drawn in errors.py"


@pytest.mark.parametrize(("name", "parent"), sorted(drawn_tree().items()))
def test_the_drawing_gives_each_class_its_parent(name: str, parent: str) -> None:
    classes = {**public_exceptions(), "RefusalkitError": RefusalkitError}
    assert name in classes, f"{name} is drawn but exported by no public module"
    assert classes[name].__bases__ == (classes[parent],)
