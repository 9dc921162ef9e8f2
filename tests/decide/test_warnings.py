"""``warnings_as`` lets one thread at a time change the process-wide warning filters, so no
thread's filter is left behind when two interleave (``catch_warnings`` alone is not thread-safe)."""

from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

from refusalkit.decide._regex import required_literals
from refusalkit.decide._warnings import warnings_as


def test_a_second_thread_waits_until_the_first_has_restored_the_filters() -> None:
    before = list(warnings.filters)
    inside, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        with warnings_as("error"):
            order.append("first in")
            inside.set()
            release.wait(10)
            order.append("first out")

    def second() -> None:
        inside.wait(10)
        with warnings_as("ignore"):
            order.append("second in")

    with ThreadPoolExecutor(max_workers=2) as pool:
        one, two = pool.submit(first), pool.submit(second)
        inside.wait(10)
        assert not two.done()  # blocked while the first holds the filters
        release.set()
        one.result(10)
        two.result(10)
    assert order == ["first in", "first out", "second in"]
    assert warnings.filters == before  # nothing left installed


def test_pattern_analysis_on_many_threads_leaves_the_filters_as_they_were() -> None:
    """The real caller: pack compilation parses patterns with warnings as errors."""
    before = list(warnings.filters)
    patterns = [r"(?i)ignore (all )?previous", r"[[a]]", r"id_rsa\d+", r"[a-z]+@example\.com"] * 50
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(required_literals, patterns))
    assert warnings.filters == before
