"""Refusal provenance: calibration runs, receipted baselines and drift verdicts
(docs/design/provenance.md).

Measure a model's refusal behaviour on a fixed calibration set, record a baseline in the journal
with a receipt, and later tell whether it drifted, in which direction, where, and how sure; a
drift the judge's own uncertainty or error could explain is ``inconclusive`` (reason ``judge``).
A rising refusal rate is ``more-restrictive``; a falling one ``more-permissive``.

The surface is the records, the main entry points and the judges; wire-format constants,
statistics and builders stay in the underscore modules.
"""

from refusalkit.provenance._audit import audit_sample, read_labels, with_audit, write_sheet
from refusalkit.provenance._baseline import Baseline, record_baseline
from refusalkit.provenance._classifier import ClassifierJudge
from refusalkit.provenance._directive import Directive, HaltReason
from refusalkit.provenance._drift import DriftReport, Flip, RefusalCount, compare
from refusalkit.provenance._html import render_html
from refusalkit.provenance._importers import (
    STARTER_SET_NAME,
    import_table,
    import_xstest,
    starter_set,
)
from refusalkit.provenance._judge_error import JudgeAudit
from refusalkit.provenance._judges import (
    Judge,
    Judgement,
    JudgeRef,
    KeywordJudge,
    RefusalOutcome,
    Refused,
    TypedPrefixJudge,
    get_judge,
    judge_names,
)
from refusalkit.provenance._model_runners import CallableRunner, OpenAIRunner, Runner
from refusalkit.provenance._replay import serve_replay
from refusalkit.provenance._require import require_baseline
from refusalkit.provenance._run_calibration import arun_calibration, run_calibration
from refusalkit.provenance._run_record import CalibrationRun, JudgedResponse
from refusalkit.provenance._set import CalibrationPrompt, CalibrationSet, Expect, load_set
from refusalkit.provenance._verdict import (
    DEFAULT_MIN_PROMPTS,
    InconclusiveReason,
    RateComparison,
    Verdict,
)

__all__ = [
    "DEFAULT_MIN_PROMPTS",
    "STARTER_SET_NAME",
    "Baseline",
    "CalibrationPrompt",
    "CalibrationRun",
    "CalibrationSet",
    "CallableRunner",
    "ClassifierJudge",
    "Directive",
    "DriftReport",
    "Expect",
    "Flip",
    "HaltReason",
    "InconclusiveReason",
    "Judge",
    "JudgeAudit",
    "JudgeRef",
    "JudgedResponse",
    "Judgement",
    "KeywordJudge",
    "OpenAIRunner",
    "RateComparison",
    "RefusalCount",
    "RefusalOutcome",
    "Refused",
    "Runner",
    "TypedPrefixJudge",
    "Verdict",
    "arun_calibration",
    "audit_sample",
    "compare",
    "get_judge",
    "import_table",
    "import_xstest",
    "judge_names",
    "load_set",
    "read_labels",
    "record_baseline",
    "render_html",
    "require_baseline",
    "run_calibration",
    "serve_replay",
    "starter_set",
    "with_audit",
    "write_sheet",
]
