"""The adapter base: one request in, one Decision out, never an exception (docs/design/engines.md).

Every adapter checks the request's shape, asks its engine, and turns the answer into an
``Outcome``. Any exception on the way or an overrun of the deadline gives ``deny`` +
``unavailable`` (fail closed); a malformed request gives ``deny`` + ``input-rejected`` by
``@request``: exactly as the built-in decision point does.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from refusalkit.engines._record import Outcome, Recorder
from refusalkit.errors import RefusalkitError, RequestError
from refusalkit.model import Decision, EngineRef, PolicyRef, parse_request

__all__ = ["Adapter", "AdapterFailure"]

log = logging.getLogger("refusalkit.engines")
_clock = time.perf_counter


class AdapterFailure(RefusalkitError):  # noqa: N818 (a verdict's absence, not a bug)
    """The engine gave no clean verdict; ``problem`` says why (no request values in it).

    Raised inside an adapter's ``outcome`` and decided ``deny`` + ``unavailable`` there; it never
    escapes ``decide``.
    """

    default_hint = "Check the engine and its policy; the decision failed closed."

    def __init__(self, problem: str, steps: tuple[Any, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps = steps


class Adapter(ABC):
    """An external engine behind refusalkit's decision contract.

    ``decide`` and ``decide_line`` never raise. ``deadline_ms`` bounds one decision; an overrun
    is ``deny`` + ``unavailable``.
    """

    kind: str = ""

    def __init__(self, recorder: Recorder, deadline_ms: float = 50.0) -> None:
        self.recorder = recorder
        self.deadline_ms = deadline_ms
        self._deadline = deadline_ms / 1000.0

    @property
    def engine(self) -> EngineRef:
        """The record's ``engine``: name and version."""
        return self.recorder.engine

    @property
    def policy(self) -> PolicyRef:
        """The record's ``policy``: id, version label, digest of the source."""
        return self.recorder.policy

    @property
    def pack(self) -> PolicyRef:
        """The policy in force as a service shows a pack: ``id``, ``version``, ``digest``."""
        return self.recorder.policy

    @abstractmethod
    def outcome(self, request: Mapping[str, Any]) -> Outcome:
        """Ask the engine; raise ``AdapterFailure`` (or anything) when it gives no verdict."""

    def decide(self, request: Any) -> Decision:
        """Decide one request (a parsed JSON object). Never raises."""
        return self._guarded(request, _clock(), "")

    def decide_line(self, line: str | bytes, *, line_number: int | None = None) -> Decision:
        """Decide one JSONL line; a line that is not JSON is decided ``input-rejected``."""
        start = _clock()
        where = f"line {line_number}: " if line_number is not None else ""
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        try:
            request = json.loads(raw.rstrip(b"\r\n"), parse_constant=_no_constant)
        except (ValueError, RecursionError) as exc:
            problem = f"{where}not JSON ({type(exc).__name__})"
            return self.recorder.failed(None, problem, raw=raw, rejected=True)
        return self._guarded(request, start, where)

    def decide_lines(self, lines: Iterable[str | bytes]) -> Iterator[tuple[int, Decision]]:
        """Decide a JSONL stream lazily: ``(line number, decision)`` per non-blank line."""
        for number, line in enumerate(lines, 1):
            if line.strip():
                yield number, self.decide_line(line, line_number=number)

    def _guarded(self, request: Any, start: float, where: str) -> Decision:
        try:
            if not _well_formed(request):
                parse_request(request)  # raises RequestError naming the problem
            digest = self.recorder.request_digest(request)  # before the engine sees the request
            decision = self.recorder.decision(request, self.outcome(request), digest)
        except RequestError as exc:
            problem = f"{where}malformed request: {exc.message}"
            return self.recorder.failed(request, problem, rejected=True)
        except AdapterFailure as exc:
            return self.recorder.failed(request, where + exc.problem, exc.steps)
        except RefusalkitError as exc:
            return self.recorder.failed(request, f"{where}{exc.message}")
        except Exception as exc:  # noqa: BLE001 (fail closed: any error is a decision)
            log.warning("%s adapter failed closed: %s", self.kind, type(exc).__name__)
            problem = f"{where}{self.kind} engine error ({type(exc).__name__})"
            return self.recorder.failed(request, problem)
        if _clock() - start > self._deadline:
            problem = f"{where}deadline of {self.deadline_ms:g} ms exceeded"
            return self.recorder.failed(request, problem, decision.why_trail)
        return decision


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _well_formed(request: Any) -> bool:
    """The common shape, checked inline: a dict with a string tool and dict args/caller."""
    return (
        type(request) is dict
        and type(request.get("tool")) is str
        and type(request.get("args", _EMPTY)) is dict
        and type(request.get("caller", _EMPTY)) is dict
    )


_EMPTY: dict[str, Any] = {}
