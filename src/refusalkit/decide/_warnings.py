"""``warnings.catch_warnings`` for code that may run on several threads at once.

``catch_warnings`` saves the process-wide filter list on entry and puts it back on exit, so two
threads that interleave it can leave one thread's filter installed for good (the Python docs call
it not thread-safe): an ``error`` filter left behind would turn any later warning into an
exception, and a decision into ``unavailable``. refusalkit's own uses go through ``warnings_as``,
which lets one thread at a time in.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

__all__ = ["warnings_as"]

_LOCK = threading.RLock()

FilterAction = Literal["default", "error", "ignore", "always", "module", "once"]


@contextmanager
def warnings_as(action: FilterAction) -> Iterator[None]:
    """Inside the block every warning is handled by ``action``; one thread at a time."""
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter(action)
        yield
