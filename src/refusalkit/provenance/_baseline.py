"""Baselines: a judged run recorded in the journal with a receipt (docs/design/provenance.md).

The ``refusalkit.baseline/v2`` record is appended to the journal; its receipt (inclusion proof +
signed checkpoint) goes into BASELINE.json next to the record, so anyone can check it offline with
nothing but the file and the journal's public key (the key inside the file is not trusted).
``refusalkit.baseline/v1`` records (outcomes with a boolean ``refused``) are still read, so
baselines recorded before v2 still compare and verify: their journaled bytes are never rewritten.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refusalkit.errors import CalibrationError, VerificationError
from refusalkit.model import format_timestamp, now_utc, uuid7
from refusalkit.provenance._judge_error import JudgeAudit
from refusalkit.provenance._judges import JudgeRef
from refusalkit.provenance._run_record import CalibrationRun, JudgedResponse, _read_json
from refusalkit.provenance._trust import keyring_public_keys, verify_trusted

if TYPE_CHECKING:
    from refusalkit.journal import Journal, Receipt
    from refusalkit.keyring import Keyring

__all__ = [
    "BASELINE_FILE_SCHEMA",
    "BASELINE_SCHEMA",
    "Baseline",
    "baseline_record",
    "journal_record",
    "record_baseline",
]

BASELINE_SCHEMA = "refusalkit.baseline/v2"
BASELINE_FILE_SCHEMA = "refusalkit.baseline-file/v1"
# v1: outcomes' ``refused`` is a boolean (read as yes / no); v2: yes / no / uncertain + p_refusal.
BASELINE_READABLE = (BASELINE_SCHEMA, "refusalkit.baseline/v1")


def _plain(value: dict[str, Any]) -> dict[str, Any]:
    """The value as it reads back from JSON, so the journaled bytes match the file."""
    plain: dict[str, Any] = json.loads(json.dumps(value, ensure_ascii=False))
    return plain


def baseline_record(run: CalibrationRun) -> dict[str, Any]:
    """The ``refusalkit.baseline/v2`` record of a run; response text is never included."""
    outcomes = [JudgedResponse.to_dict(o) for o in run.outcomes]
    for o in outcomes:
        o.pop("response", None)
    return _plain(
        {
            "schema": BASELINE_SCHEMA,
            "baseline_id": uuid7(),
            "recorded_at": format_timestamp(now_utc()),
            "run_id": run.run_id,
            "model": run.model,
            "endpoint": run.endpoint,
            "judge": run.judge.to_dict(),
            "calibration_prompt_set_hash": run.set_hash,
            "calibration_set_name": run.set_name,
            "sampling": dict(run.sampling),
            "baseline_refusal_rate": run.refusal_rate,
            "baseline_refusal_rate_interval": list(run.refusal_rate_interval),
            "refusal_category_distribution": run.category_distribution(),
            "outcomes": outcomes,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "uncertain_share": run.uncertain_share,
            **(
                {"judge_audit": dict(run.extra["judge_audit"])}
                if "judge_audit" in run.extra
                else {}
            ),
        }
    )


@dataclass(frozen=True, slots=True)
class Baseline:
    """A baseline record and (once journaled) its receipt."""

    record: Mapping[str, Any]
    receipt: Receipt | None = None

    @property
    def baseline_id(self) -> str:
        """The baseline's UUIDv7."""
        return str(self.record["baseline_id"])

    @property
    def model(self) -> str:
        """The model measured."""
        return str(self.record["model"])

    @property
    def judge(self) -> JudgeRef:
        """The judge used."""
        return JudgeRef.from_dict(self.record["judge"])

    @property
    def set_hash(self) -> str:
        """The calibration set hash."""
        return str(self.record["calibration_prompt_set_hash"])

    @property
    def outcomes(self) -> tuple[JudgedResponse, ...]:
        """Per-prompt outcomes."""
        return tuple(JudgedResponse.from_dict(o) for o in self.record["outcomes"])

    @property
    def judge_audit(self) -> JudgeAudit | None:
        """The human audit of the run's judge, recorded with the baseline, if any."""
        data = self.record.get("judge_audit")
        return None if data is None else JudgeAudit.from_dict(data)

    @property
    def refusal_rate(self) -> float:
        """The baseline refusal rate."""
        return float(self.record["baseline_refusal_rate"])

    @property
    def index(self) -> int | None:
        """The journal index, when receipted."""
        return None if self.receipt is None else self.receipt.index

    def identity(self) -> dict[str, Any]:
        """Who this baseline is, for a drift report."""
        return {
            "kind": "baseline",
            "baseline_id": self.baseline_id,
            "journal_index": self.index,
            "run_id": self.record.get("run_id"),
            "model": self.model,
            "judge": self.judge.to_dict(),
            "calibration_prompt_set_hash": self.set_hash,
            "finished_at": self.record.get("finished_at"),
        }

    def verify(
        self,
        *,
        public_key: bytes | Sequence[bytes] | None = None,
        keyring: Keyring | None = None,
    ) -> None:
        """Check the receipt offline (inclusion proof + checkpoint signature) against a key you
        trust: ``public_key`` (one key or several), else every signing key of ``keyring``.

        The key stored in the receipt is never trusted by itself: a file re-signed with another
        key would pass. Fails closed (:class:`VerificationError`) with no trusted key, a receipt
        signed by another key, or any proof failure.
        """
        if self.receipt is None:
            raise VerificationError(
                "this baseline has no receipt", hint="Record it with a journal first."
            )
        if isinstance(public_key, bytes):
            trusted: Sequence[bytes] = (public_key,)
        elif public_key is not None:
            trusted = tuple(public_key)
        else:
            trusted = () if keyring is None else keyring_public_keys(keyring)
        verify_trusted(dict(self.record), self.receipt, trusted)

    def to_file(self) -> dict[str, Any]:
        """The BASELINE.json form."""
        return {
            "schema": BASELINE_FILE_SCHEMA,
            "baseline": dict(self.record),
            "receipt": None if self.receipt is None else self.receipt.to_dict(),
        }

    def write(self, path: str | Path) -> Path:
        """Write BASELINE.json."""
        target = Path(path)
        target.write_text(json.dumps(self.to_file(), indent=2, ensure_ascii=False) + "\n", "utf-8")
        return target

    @classmethod
    def from_file(cls, data: Any, *, source: str = "<memory>") -> Baseline:
        """Read the BASELINE.json form."""
        from refusalkit.journal import Receipt  # noqa: PLC0415 (journal loads lazily)

        if not isinstance(data, dict) or data.get("schema") != BASELINE_FILE_SCHEMA:
            raise CalibrationError(
                f"{source}: not a baseline file (want schema {BASELINE_FILE_SCHEMA!r})",
                hint="Give the BASELINE.json written by `refusalkit calibrate baseline`.",
            )
        record = data.get("baseline")
        if not isinstance(record, dict) or record.get("schema") not in BASELINE_READABLE:
            raise CalibrationError(
                f"{source}: the baseline record is missing or not one of "
                f"{', '.join(BASELINE_READABLE)}",
                hint="Give the BASELINE.json written by `refusalkit calibrate baseline`.",
            )
        try:
            receipt = None if data.get("receipt") is None else Receipt.from_dict(data["receipt"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"{source}: malformed receipt ({exc!r})") from None
        baseline = cls(record, receipt)
        baseline.judge_audit  # noqa: B018 (checked now, so a bad audit fails on load)
        return baseline

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        """Read BASELINE.json from a file."""
        return cls.from_file(_read_json(path), source=str(path))


def journal_record(journal: Journal, record: Mapping[str, Any]) -> tuple[int, Receipt]:
    """Append one record and return its index and receipt."""
    index = journal.append([_plain(dict(record))])[0]
    return index, journal.receipt(index)


def record_baseline(run: CalibrationRun, journal: Journal) -> Baseline:
    """Append the run's baseline record to the journal and return it with its receipt."""
    record = baseline_record(run)
    _, receipt = journal_record(journal, record)
    return Baseline(record, receipt)
