"""A plainly written glob matcher (docs/design/policy.md) that the engine's tests check against."""

from __future__ import annotations

import functools

__all__ = ["reference_glob"]


def reference_glob(glob: str, value: str) -> bool:
    """docs/design/policy.md globs over the whole value: ``**/`` is no or any directories, ``**``
    anything,
    ``*`` any run without ``/``, ``?`` one character but ``/``; newlines are characters."""

    @functools.cache
    def match(i: int, j: int) -> bool:
        if i == len(glob):
            return j == len(value)
        if glob.startswith("**/", i):
            ends = [k + 1 for k in range(j, len(value)) if value[k] == "/"]
            return any(match(i + 3, k) for k in [j, *ends])
        if glob.startswith("**", i):
            return any(match(i + 2, k) for k in range(j, len(value) + 1))
        if glob[i] == "*":
            stop = value.find("/", j)
            stop = len(value) if stop == -1 else stop
            return any(match(i + 1, k) for k in range(j, stop + 1))
        if j == len(value):
            return False
        if glob[i] == "?":
            return value[j] != "/" and match(i + 1, j + 1)
        return value[j] == glob[i] and match(i + 1, j + 1)

    return match(0, 0)
