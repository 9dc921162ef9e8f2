"""One bounded cache for the hot paths' memo tables (shared by every subpackage).

The caches hold values derived from a few inputs that repeat (nested records, redaction tokens,
why-trail steps, compiled plans), so the cheapest correct bound is the crudest: when the table is
full, empty it and start again. An attacker who sends endless distinct values gets a cache that
keeps emptying, never one that grows. Lookups are plain ``dict.get`` (C speed); only a miss pays
for ``put``.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["BoundedCache"]

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(dict[K, V]):
    """A dict of at most ``limit`` entries: ``put`` empties it first when it is full.

    >>> cache: BoundedCache[str, int] = BoundedCache(2)
    >>> cache.put("a", 1), cache.put("b", 2), cache.put("c", 3)
    (1, 2, 3)
    >>> dict(cache)
    {'c': 3}
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: K, value: V) -> V:
        """Remember ``value`` under ``key`` and return it."""
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value
