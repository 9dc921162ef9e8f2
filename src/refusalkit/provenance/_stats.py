"""The statistics of drift: Wilson score intervals and the exact McNemar test.

- Wilson (1927) score interval for a binomial proportion, 95% by default (z = 1.959964): it
  stays inside [0, 1] and behaves at 0 and n, where the textbook Wald interval does not.
- McNemar (1947) for paired outcomes, exact form: among the prompts whose outcome changed, the
  ``b`` that went refused → complied and the ``c`` that went complied → refused are, if nothing
  changed, Binomial(b + c, 1/2). The two-sided p-value is ``min(1, 2 · P[X ≤ min(b, c)])``,
  computed with exact integers (``math.comb``).
"""

from __future__ import annotations

import math

__all__ = ["Z95", "mcnemar_exact", "wilson_interval"]

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval ``(low, high)`` of ``successes`` in ``n``; (0, 1) if n = 0."""
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (1.0 when none)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got {b} and {c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / (1 << n))
