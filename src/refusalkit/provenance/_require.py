"""``require_baseline``: the session-start check for an agent that relies on refusals.

It finds the latest baseline for (model, set) in the journal, verifies its receipt, checks its
age, and looks at the latest drift report recorded against it; it returns a
:class:`Directive` and never raises for a missing or bad baseline (those are HALT reasons).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refusalkit.errors import JournalError, RefusalkitError, VerificationError
from refusalkit.provenance._baseline import BASELINE_READABLE
from refusalkit.provenance._directive import Directive, HaltReason
from refusalkit.provenance._drift import DRIFT_READABLE
from refusalkit.provenance._set import CalibrationSet
from refusalkit.provenance._trust import keyring_public_keys, verify_trusted

if TYPE_CHECKING:
    from refusalkit.journal import Journal
    from refusalkit.keyring import Keyring

__all__ = ["require_baseline"]


@contextmanager
def _opened(journal: Journal | str | Path, keyring: Keyring | None) -> Iterator[Journal]:
    if not isinstance(journal, str | Path):
        yield journal
        return
    from refusalkit.journal import open_journal  # noqa: PLC0415 (journal loads lazily)
    from refusalkit.keyring import resolve_keyring  # noqa: PLC0415

    ring = keyring if keyring is not None else resolve_keyring(None)[0]
    with open_journal(str(journal), ring) as opened:
        yield opened


def _records(journal: Journal, schemas: Sequence[str]) -> list[tuple[int, dict[str, Any]]]:
    """Entries of any of ``schemas`` (every version still read), in index order."""
    return sorted(
        (row for schema in schemas for row in journal.query(schema=schema)), key=lambda r: r[0]
    )


def _latest(journal: Journal, model: str, set_hash: str) -> tuple[int, dict[str, Any]] | None:
    found = None
    for index, record in _records(journal, BASELINE_READABLE):
        if record.get("model") == model and record.get("calibration_prompt_set_hash") == set_hash:
            found = (index, record)
    return found


def _latest_drift(journal: Journal, baseline_id: str, after: int) -> dict[str, Any] | None:
    found = None
    for index, record in _records(journal, DRIFT_READABLE):
        if index > after and record.get("baseline", {}).get("baseline_id") == baseline_id:
            found = record
    return found


def _age(record: dict[str, Any], now: dt.datetime) -> dt.timedelta:
    stamp = str(record.get("finished_at") or record.get("recorded_at"))
    return now - dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _trusted(
    journal: Journal, public_key: bytes | None, keyring: Keyring | None
) -> tuple[bytes, ...]:
    """The pinned key, else the caller's keyring's keys, else the journal's own signing key."""
    if public_key is not None:
        return (public_key,)
    if keyring is not None:
        return keyring_public_keys(keyring)
    return (journal.public_key_bytes(),)


def _verified(journal: Journal, index: int, trusted: Sequence[bytes]) -> None:
    receipt = journal.receipt(index)
    if receipt.index != index:
        raise VerificationError(f"receipt is for index {receipt.index}, not {index}")
    entry = journal.entries(index, index + 1)[0]
    verify_trusted(entry, receipt, trusted)


def _drift_directive(journal: Journal, record: dict[str, Any], index: int) -> Directive | None:
    drift = _latest_drift(journal, str(record.get("baseline_id")), index)
    directive = (drift or {}).get("directive", {})
    if directive.get("action") != "HALT":
        return None
    code = (
        HaltReason.INCONCLUSIVE if directive.get("code") == "inconclusive" else HaltReason.DRIFTED
    )
    reason = f"latest drift report: {directive.get('reason')}"
    return Directive.halt(code, reason, baseline_index=index)


def _check(
    journal: Journal,
    *,
    model: str,
    set_hash: str,
    max_age: dt.timedelta,
    trusted: Sequence[bytes],
    now: dt.datetime,
) -> Directive:
    latest = _latest(journal, model, set_hash)
    if latest is None:
        reason = f"no baseline for model {model!r} and set {set_hash}"
        return Directive.halt(HaltReason.NO_BASELINE, reason)
    index, record = latest
    try:
        _verified(journal, index, trusted)
    except (VerificationError, JournalError) as exc:
        reason = f"baseline at index {index}: {exc}"
        return Directive.halt(HaltReason.RECEIPT_INVALID, reason, baseline_index=index)
    age = _age(record, now)
    if age > max_age:
        reason = f"baseline at index {index} is {age} old (max {max_age})"
        return Directive.halt(HaltReason.STALE, reason, baseline_index=index)
    drifted = _drift_directive(journal, record, index)
    if drifted is not None:
        return drifted
    reason = f"baseline at index {index} verified, {age} old; no drift reported against it"
    return Directive.go(reason, baseline_index=index)


def require_baseline(
    model: str,
    set: CalibrationSet | str,  # noqa: A002 (the name the contract uses)
    max_age: dt.timedelta | float,
    *,
    journal: Journal | str | Path,
    keyring: Keyring | None = None,
    public_key: bytes | None = None,
    now: dt.datetime | None = None,
) -> Directive:
    """PROCEED, or HALT with why: no baseline, stale, drifted, inconclusive, receipt invalid.

    ``set`` is a calibration set or its hash; ``max_age`` a timedelta or seconds; ``journal`` an
    open journal or a store (opened with ``keyring``, default: the user's). The receipt must be
    signed with a trusted key: ``public_key`` when given, else a signing key of ``keyring``, else
    (an open journal and no keyring) the journal's own key; any other → HALT ``receipt-invalid``.
    """
    set_hash = set.hash if isinstance(set, CalibrationSet) else set
    limit = max_age if isinstance(max_age, dt.timedelta) else dt.timedelta(seconds=max_age)
    moment = now or dt.datetime.now(dt.UTC)
    try:
        with _opened(journal, keyring) as opened:
            return _check(
                opened,
                model=model,
                set_hash=set_hash,
                max_age=limit,
                trusted=_trusted(opened, public_key, keyring),
                now=moment,
            )
    except RefusalkitError as exc:  # fail closed: an unreadable journal is no baseline
        return Directive.halt(HaltReason.NO_BASELINE, f"journal unavailable: {exc}")
