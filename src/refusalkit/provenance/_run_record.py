"""The record of one calibration run (RUN.json, ``refusalkit.calibration-run/v2``).

A run holds its metadata (model, endpoint, judge id and version, set hash, sampling parameters,
start and finish times) and one outcome per prompt
``{id, category, expect, refused, p_refusal, confidence, outcome, detail}``, where ``refused``
is ``yes``, ``no`` or ``uncertain`` (v2; v1 runs, with a boolean, are still read) and
``outcome`` is ``full-compliance``, ``partial-refusal``, ``full-refusal`` or ``uncertain``
(derived from ``refused`` and ``detail`` when an older record has none), and the run's
``uncertain_share``; ``judge_audit`` once a person has labelled a sample
(docs/provenance.md, "Human audit").
Responses are kept only as SHA-256 digests unless the caller opts in (docs/design/provenance.md).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from refusalkit.errors import CalibrationError
from refusalkit.provenance._judges import Judgement, JudgeRef, RefusalOutcome, Refused, outcome_of
from refusalkit.provenance._set import Expect
from refusalkit.provenance._stats import wilson_interval

if TYPE_CHECKING:
    from refusalkit.provenance._judge_error import JudgeAudit

__all__ = [
    "RUN_SCHEMA",
    "CalibrationRun",
    "JudgedResponse",
    "category_distribution",
    "outcome_counts",
    "rate_summary",
]

RUN_SCHEMA = "refusalkit.calibration-run/v2"
_READABLE = (RUN_SCHEMA, "refusalkit.calibration-run/v1")


def response_digest(text: str) -> str:
    """``sha256:<hex>`` of a response's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_refused(value: Any, p: Any) -> tuple[Refused, float]:
    """``refused`` as written by run v2 (``yes``/``no``/``uncertain``) or v1 (a boolean)."""
    if isinstance(value, bool):  # calibration-run/v1: the judge was taken as certain
        return (Refused.YES if value else Refused.NO), float(value)
    label = Refused(value)
    if p is None:
        return label, {Refused.YES: 1.0, Refused.NO: 0.0}.get(label, 0.5)
    probability = float(p)
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"p_refusal {probability} is not a probability")
    return label, probability


def _check_outcome(value: Any, refused: Refused, detail: str) -> None:
    """A recorded ``outcome`` must be one of the four and agree with ``refused`` and ``detail``
    (records written before outcomes were recorded have none: it is derived)."""
    if value is None:
        return
    if RefusalOutcome(value) is not outcome_of(refused, detail):
        raise ValueError(f"outcome {value!r} contradicts refused {str(refused)!r} ({detail!r})")


@dataclass(frozen=True, slots=True)
class JudgedResponse:
    """How the model answered one prompt, as judged: refused yes / no / uncertain."""

    id: str
    category: str
    expect: Expect
    refused: Refused
    p_refusal: float
    detail: str
    response_sha256: str = ""
    response: str | None = None

    @property
    def is_refusal(self) -> bool:
        """The best single reading (an uncertain judgement leans by ``p_refusal``)."""
        return Judgement(self.refused, self.p_refusal, self.detail).is_refusal

    @property
    def uncertain(self) -> bool:
        """True when the judge could not tell."""
        return self.refused is Refused.UNCERTAIN

    @property
    def outcome(self) -> RefusalOutcome:
        """Full compliance, partial refusal, full refusal or uncertain (XSTest's scheme)."""
        return outcome_of(self.refused, self.detail)

    def refusal_reading(self, *, full_only: bool = False) -> bool:
        """The best single reading, counting partial refusals as refusals unless ``full_only``."""
        if full_only and self.outcome is RefusalOutcome.PARTIAL_REFUSAL:
            return False
        return self.is_refusal

    def to_dict(self) -> dict[str, Any]:
        """The wire form; ``response`` only when it was kept."""
        data: dict[str, Any] = {
            "id": self.id,
            "category": self.category,
            "expect": str(self.expect),
            "refused": str(self.refused),
            "p_refusal": round(self.p_refusal, 6),
            "confidence": round(max(self.p_refusal, 1.0 - self.p_refusal), 6),
            "outcome": str(self.outcome),
            "detail": self.detail,
        }
        if self.response_sha256:
            data["response_sha256"] = self.response_sha256
        if self.response is not None:
            data["response"] = self.response
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgedResponse:
        """Read the wire form (v2, or v1 with a boolean ``refused``)."""
        response = data.get("response")
        refused, p = _read_refused(data["refused"], data.get("p_refusal"))
        detail = str(data.get("detail", ""))
        _check_outcome(data.get("outcome"), refused, detail)
        return cls(
            id=str(data["id"]),
            category=str(data["category"]),
            expect=Expect(data["expect"]),
            refused=refused,
            p_refusal=p,
            detail=detail,
            response_sha256=str(data.get("response_sha256", "")),
            response=None if response is None else str(response),
        )


def outcome_counts(outcomes: Iterable[JudgedResponse]) -> dict[str, int]:
    """How many outcomes of each kind: full compliance, partial and full refusal, uncertain."""
    counts = {str(kind): 0 for kind in RefusalOutcome}
    for o in outcomes:
        counts[str(o.outcome)] += 1
    return counts


def rate_summary(refused: int, n: int) -> dict[str, Any]:
    """``{n, refused, rate, interval}`` with the 95% Wilson interval."""
    low, high = wilson_interval(refused, n)
    return {"n": n, "refused": refused, "rate": refused / n if n else 0.0, "interval": [low, high]}


def category_distribution(outcomes: Iterable[JudgedResponse]) -> dict[str, dict[str, Any]]:
    """Refusal rate per category (sorted by category), each with its Wilson interval."""
    counts: dict[str, list[int]] = {}
    for o in outcomes:
        cell = counts.setdefault(o.category, [0, 0])
        cell[0] += int(o.is_refusal)
        cell[1] += 1
    return {cat: rate_summary(k, n) for cat, (k, n) in sorted(counts.items())}


@dataclass(frozen=True, slots=True)
class CalibrationRun:
    """One run of a calibration set against a model, judged."""

    run_id: str
    model: str
    endpoint: str | None
    judge: JudgeRef
    set_hash: str
    set_name: str
    sampling: Mapping[str, Any]
    started_at: str
    finished_at: str
    outcomes: tuple[JudgedResponse, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def refused_count(self) -> int:
        """How many prompts were refused."""
        return sum(o.is_refusal for o in self.outcomes)

    @property
    def judge_audit(self) -> JudgeAudit | None:
        """The human audit of this run's judge (``calibrate label``), if any."""
        from refusalkit.provenance._judge_error import JudgeAudit  # noqa: PLC0415 (import cycle)

        data = self.extra.get("judge_audit")
        return None if data is None else JudgeAudit.from_dict(data)

    @property
    def uncertain_share(self) -> float:
        """The share of outcomes the judge could not tell."""
        return (
            sum(o.uncertain for o in self.outcomes) / len(self.outcomes) if self.outcomes else 0.0
        )

    @property
    def refusal_rate(self) -> float:
        """Refused / prompts."""
        return self.refused_count / len(self.outcomes) if self.outcomes else 0.0

    @property
    def refusal_rate_interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of the refusal rate."""
        return wilson_interval(self.refused_count, len(self.outcomes))

    def category_distribution(self) -> dict[str, dict[str, Any]]:
        """Refusal rate per category with intervals."""
        return category_distribution(self.outcomes)

    def identity(self) -> dict[str, Any]:
        """Who this run is, for a drift report."""
        return {
            "kind": "run",
            "run_id": self.run_id,
            "model": self.model,
            "endpoint": self.endpoint,
            "judge": self.judge.to_dict(),
            "calibration_prompt_set_hash": self.set_hash,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    def to_dict(self) -> dict[str, Any]:
        """The RUN.json form."""
        return {
            "schema": RUN_SCHEMA,
            "run_id": self.run_id,
            "model": self.model,
            "endpoint": self.endpoint,
            "judge": self.judge.to_dict(),
            "calibration_prompt_set_hash": self.set_hash,
            "calibration_set_name": self.set_name,
            "sampling": dict(self.sampling),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "prompts": len(self.outcomes),
            "refusal_rate": self.refusal_rate,
            "refusal_rate_interval": list(self.refusal_rate_interval),
            "refusal_category_distribution": self.category_distribution(),
            "uncertain_share": self.uncertain_share,
            "outcome_counts": outcome_counts(self.outcomes),
            "full_refusal_rate": (
                sum(o.refusal_reading(full_only=True) for o in self.outcomes) / len(self.outcomes)
                if self.outcomes
                else 0.0
            ),
            "outcomes": [o.to_dict() for o in self.outcomes],
            **dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "<memory>") -> CalibrationRun:
        """Read RUN.json; raises :class:`CalibrationError` when it is not a run record."""
        if data.get("schema") not in _READABLE:
            raise CalibrationError(
                f"{source}: not a calibration run "
                f"(schema {data.get('schema')!r}, want {RUN_SCHEMA!r})",
                hint="Give the RUN.json written by `refusalkit calibrate run`.",
            )
        try:
            run = cls(
                run_id=str(data["run_id"]),
                model=str(data["model"]),
                endpoint=None if data.get("endpoint") is None else str(data["endpoint"]),
                judge=JudgeRef.from_dict(data["judge"]),
                set_hash=str(data["calibration_prompt_set_hash"]),
                set_name=str(data.get("calibration_set_name", "")),
                sampling=dict(data.get("sampling") or {}),
                started_at=str(data["started_at"]),
                finished_at=str(data["finished_at"]),
                outcomes=tuple(JudgedResponse.from_dict(o) for o in data["outcomes"]),
                extra={k: data[k] for k in _EXTRA if k in data},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"{source}: malformed calibration run ({exc!r})") from None
        run.judge_audit  # noqa: B018 (checked now, so a bad audit fails on load)
        return run

    def write(self, path: str | Path) -> Path:
        """Write RUN.json (pretty, UTF-8)."""
        target = Path(path)
        target.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", "utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> CalibrationRun:
        """Read RUN.json from a file."""
        return cls.from_dict(_read_json(path), source=str(path))


_EXTRA = ("judge_audit",)  # kept through a read-write cycle


def _read_json(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise CalibrationError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CalibrationError(f"{path}: not valid JSON ({exc})") from None
