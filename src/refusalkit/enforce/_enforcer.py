"""The ``Enforcer`` interface every integration takes, and its local implementation.

An enforcer turns a request into a ``Decision`` and never raises while doing so: a local
``DecisionPoint`` (optionally journaling each decision) or the service's ``Client``. A decision
that cannot be journaled is not in force, so it is replaced by ``deny`` + ``unavailable``
(docs/design/client.md).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar, runtime_checkable

from refusalkit.approvals import Answer, AnswerKind, ApprovalBook, ApprovalCheck, needs_settling
from refusalkit.decide import DecisionEncoder, DecisionPoint, load_pack
from refusalkit.enforce._failclosed import fail_closed
from refusalkit.enforce._group import GroupJournal
from refusalkit.enforce._results import ResultChecker
from refusalkit.errors import RefusalkitError, UsageError
from refusalkit.journal import Entry, Journal, decision_fields, signer_state_dir
from refusalkit.keyring import Keyring
from refusalkit.model import Decision, refusal_line

__all__ = ["Enforcer", "JournalWriter", "LocalEnforcer", "ToolBlockedError", "enforcer"]

log = logging.getLogger("refusalkit.enforce")
T = TypeVar("T")


@runtime_checkable
class Enforcer(Protocol):
    """Decides tool-call requests; ``decide`` and ``adecide`` never raise, never allow on error."""

    def decide(self, request: Mapping[str, Any]) -> Decision:
        """The decision on one request."""
        ...

    async def adecide(self, request: Mapping[str, Any]) -> Decision:
        """The decision on one request, from async code."""
        ...


class ToolBlockedError(RefusalkitError):
    """A tool call was ``block``ed: the run must end. ``decision`` is the journaled record."""

    default_hint = "A block ends the run; a person must review it (see the decision's why-trail)."

    def __init__(self, decision: Decision) -> None:
        super().__init__(refusal_line(decision))
        self.decision = decision


class JournalWriter:
    """Appends decisions to a ``Journal`` as their RFC 8785 bytes (``DecisionEncoder``), one
    append per call, serialised by a lock so threads may share it. Raises what the journal
    raises."""

    __slots__ = ("_encoder", "journal", "lock")

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self._encoder = DecisionEncoder()
        self.lock = threading.Lock()  # held by whoever appends to ``journal`` through this writer

    def append(self, decisions: Sequence[Decision]) -> list[int]:
        """The decisions' journal indices."""
        entries = [(self._encoder.encode(d), decision_fields(d)) for d in decisions]
        with self.lock:
            return self.journal.append_encoded(entries)


class LocalEnforcer:
    """A ``DecisionPoint`` in this process, journaling each decision when given a journal.

    Thread-safe, and shared by concurrent callers. With a ``GroupJournal`` (what ``enforcer``
    opens), the decisions of concurrent callers, threads or async tasks, are committed in groups,
    and each is returned only once durable; with a bare ``Journal``, each decision is one
    commit, serialised by a lock. With a journal and the ``keyring`` that signs it, a request
    for approval is settled against the journal's grants (docs/approvals.md): after a grant, the
    same call is allowed once. Without the keyring no grant can be checked, so such a request
    stays refused.
    """

    __slots__ = ("_asker", "_book", "_encoder", "_keyring", "_writer", "journal", "point",
                 "results")  # fmt: skip

    def __init__(
        self,
        point: DecisionPoint,
        journal: Journal | GroupJournal | None = None,
        keyring: Keyring | None = None,
    ) -> None:
        self.point = point
        self.journal = journal
        self._keyring = keyring
        self._encoder = DecisionEncoder()
        self._writer = JournalWriter(journal) if isinstance(journal, Journal) else None
        self._book = (
            ApprovalBook(journal, keyring) if isinstance(journal, Journal) and keyring else None
        )
        ring = keyring if keyring is not None else Keyring.generate()
        self._asker: DecisionPoint | None = None  # decides approval questions (``approval``)
        append = None if journal is None else self._append_entries
        self.results = ResultChecker(ring.redactor(), point.pack.result_filter_hits, append)
        """Tool results of this enforcer's sessions (``ResultChecker``): scanned, journaled."""

    def _append_entries(self, entries: Sequence[Entry]) -> list[int]:
        if isinstance(self.journal, GroupJournal):
            return self.journal.append(entries)
        if self._writer is None:  # pragma: no cover (only called with a journal)
            raise UsageError("no journal to append to")
        with self._writer.lock:
            return self._writer.journal.append_encoded(list(entries))

    def _entries(self, decision: Decision) -> list[Entry]:
        return [(self._encoder.encode(decision), decision_fields(decision))]

    def _settle(self, journal: Journal, decision: Decision) -> tuple[Decision, int]:
        """On the group writer's own connection: settle a request for approval and append it."""
        if self._keyring is None:  # only called with a keyring
            raise UsageError("settling an approval needs the journal's keyring")
        return ApprovalBook(journal, self._keyring).append_settled(decision)

    def _journal(self, decision: Decision) -> Decision:
        decision, index = self._journal_indexed(decision)
        self.results.remember(decision, index)
        return decision

    def _journal_indexed(self, decision: Decision) -> tuple[Decision, int | None]:
        settle = self._keyring is not None and needs_settling(decision)
        if isinstance(self.journal, GroupJournal):
            if settle:
                return self.journal.run(lambda j: self._settle(j, decision))
            return decision, self.journal.append(self._entries(decision))[0]
        if self._writer is not None:
            if self._book is not None and settle:
                with self._writer.lock:
                    return self._book.append_settled(decision)
            return decision, self._writer.append([decision])[0]
        return decision, None

    def _refused(self, request: Mapping[str, Any], exc: BaseException) -> Decision:
        log.warning("journal append failed, the call is refused: %s", type(exc).__name__)
        return fail_closed(
            request,
            f"the journal cannot take the decision ({type(exc).__name__})",
            policy=self.point.pack.ref,
        )

    def decide(self, request: Mapping[str, Any]) -> Decision:
        """Decide, then journal; a decision the journal cannot take becomes a fail-closed one."""
        decision = self.point.decide(request)
        try:
            return self._journal(decision)
        except Exception as exc:  # noqa: BLE001 (fail closed: an unjournaled decision is not in force)
            return self._refused(request, exc)

    async def adecide(self, request: Mapping[str, Any]) -> Decision:
        """``decide`` from async code: the loop is never blocked by the journal's write."""
        if self.journal is None:
            return self.decide(request)
        if not isinstance(self.journal, GroupJournal):
            return await asyncio.to_thread(self.decide, request)
        decision = self.point.decide(request)
        if self._keyring is not None and needs_settling(decision):  # settled on the writer
            return await asyncio.to_thread(self.decide, request)
        try:
            [index] = await self.journal.aappend(self._entries(decision))
        except Exception as exc:  # noqa: BLE001 (fail closed: an unjournaled decision is not in force)
            return self._refused(request, exc)
        self.results.remember(decision, index)
        return decision

    # approvals in a framework's own pause (docs/approvals.md) ---------------------------

    def _on_journal(self, fn: Callable[[ApprovalBook], T]) -> T:
        """Run ``fn`` on an approval book over the journal's writer (serialised with appends)."""
        if (
            self.journal is None
            or self._keyring is None
            or (self._book is None and not isinstance(self.journal, GroupJournal))
        ):
            raise UsageError(
                "approvals need the enforcer's journal and the keyring that signs it",
                hint="Make it with refusalkit.enforcer(policy=..., journal=STORE, keyring=PATH).",
            )
        ring = self._keyring
        if isinstance(self.journal, GroupJournal):
            return self.journal.run(lambda j: fn(ApprovalBook(j, ring)))
        book = self._book
        with self._writer.lock if self._writer is not None else threading.Lock():
            return fn(book) if book is not None else fn(ApprovalBook(self.journal, ring))

    def approval(self, request: Mapping[str, Any]) -> ApprovalCheck:
        """Whether ``request`` waits for a person: the pack asks for approval and no valid grant
        covers it. Uses up no grant: the call's own decision (``decide``) does that. When a person
        must answer, the request for approval is journaled once (a pending one for the same
        action is reused). Never raises: a check that fails says ``required``."""
        try:
            if self._asker is None:  # its own limit counts: a question is not a call
                self._asker = DecisionPoint(self.point.pack, self._keyring or Keyring.generate())
            asked = self._asker.decide(request)
            if not needs_settling(asked):
                return ApprovalCheck(required=False)
            return self._on_journal(lambda book: book.ask(asked))
        except Exception as exc:  # noqa: BLE001 (fail closed: the person is asked)
            log.warning("an approval check failed: %s", type(exc).__name__)
            return ApprovalCheck(required=True, problem=f"the check failed ({type(exc).__name__})")

    def answer(
        self,
        kind: AnswerKind,
        request_id: str,
        approver: str,
        *,
        ttl_s: int | None = None,
        reason: str | None = None,
    ) -> tuple[int, Answer]:
        """Record a person's grant or denial of ``request_id``: signed, journaled, linked to the
        request's journal index (``ApprovalBook.answer``; ``ApprovalError`` when refused, e.g.
        an agent answering its own request)."""
        return self._on_journal(
            lambda book: book.answer(kind, request_id, approver, ttl_s=ttl_s, reason=reason)
        )

    def close(self) -> None:
        """Close the journal, if any (waits for appends in flight)."""
        if self.journal is not None:
            self.journal.close()

    def __enter__(self) -> LocalEnforcer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def enforcer(
    *,
    policy: str | Path,
    journal: str | Path | None = None,
    keyring: str | Path | Keyring | None = None,
    deadline_ms: float = 50.0,
    journal_wait_s: float = 10.0,
) -> LocalEnforcer:
    """A local ``Enforcer``: the pack at ``policy``, decisions journaled to ``journal`` if given.

    ``keyring`` (a path or a ``Keyring``) keys the redaction tokens and signs the journal's
    checkpoints; without one, a fresh keyring is made, which a journal does not accept (its
    tokens and signatures would be unverifiable once the process ends). Concurrent callers'
    decisions are committed in groups; each caller waits at most ``journal_wait_s`` seconds for
    its decision to be durable, and past that gets ``deny`` + ``unavailable``.
    """
    if keyring is None:
        if journal is not None:
            raise UsageError(
                "a journal needs the keyring that signs it",
                hint="Pass keyring=PATH (make one with `refusalkit keys init PATH`).",
            )
        ring = Keyring.generate()
    else:
        ring = keyring if isinstance(keyring, Keyring) else Keyring.load(keyring)
    point = DecisionPoint(load_pack(policy), ring, deadline_ms=deadline_ms)
    # a keyring file's signer state learns the journal's origin (docs/design/journal.md)
    state = signer_state_dir(Path(keyring)) if isinstance(keyring, (str, Path)) else None
    store = (
        GroupJournal(journal, ring, wait_s=journal_wait_s, signer_state=state)
        if journal is not None
        else None
    )
    return LocalEnforcer(point, store, ring)
