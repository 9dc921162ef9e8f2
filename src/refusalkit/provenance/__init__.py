"""Refusal provenance: calibration runs, receipted baselines and drift verdicts (DESIGN.md §5).

Measure a model's refusal behaviour on a fixed calibration set, record a baseline in the journal
with a receipt, and later tell whether it drifted, in which direction, where, and how sure.
A rising refusal rate is ``more-restrictive``; a falling one ``more-permissive``.
"""

from refusalkit.provenance._baseline import (
    BASELINE_FILE_SCHEMA,
    BASELINE_SCHEMA,
    Baseline,
    baseline_record,
    journal_record,
    record_baseline,
)
from refusalkit.provenance._cache import ResponseCache, default_cache_path
from refusalkit.provenance._classifier import ClassifierJudge
from refusalkit.provenance._directive import Directive, DirectiveAction, HaltReason
from refusalkit.provenance._drift import DRIFT_SCHEMA, DriftReport, Flip, compare
from refusalkit.provenance._html import render_html
from refusalkit.provenance._importers import STARTER_SET_NAME, import_xstest, starter_set
from refusalkit.provenance._judges import (
    TYPED_REFUSAL_PREFIX,
    Judge,
    Judgement,
    JudgeRef,
    KeywordJudge,
    Refused,
    TypedPrefixJudge,
    get_judge,
    judge_names,
)
from refusalkit.provenance._model_runners import CallableRunner, OpenAIRunner, Runner
from refusalkit.provenance._require import require_baseline
from refusalkit.provenance._run_calibration import arun_calibration, run_calibration
from refusalkit.provenance._run_record import RUN_SCHEMA, CalibrationRun, JudgedResponse
from refusalkit.provenance._set import (
    CalibrationPrompt,
    CalibrationSet,
    Expect,
    load_set,
    parse_set,
    set_hash,
)
from refusalkit.provenance._stats import mcnemar_exact, wilson_interval
from refusalkit.provenance._trust import keyring_public_keys
from refusalkit.provenance._judge_error import ErrorSource, JudgeAudit
from refusalkit.provenance._verdict import (
    DEFAULT_MIN_PROMPTS,
    InconclusiveReason,
    RateComparison,
    Verdict,
    compare_counts,
    min_attainable_p,
)

__all__ = [
    "BASELINE_FILE_SCHEMA",
    "BASELINE_SCHEMA",
    "DEFAULT_MIN_PROMPTS",
    "DRIFT_SCHEMA",
    "RUN_SCHEMA",
    "STARTER_SET_NAME",
    "TYPED_REFUSAL_PREFIX",
    "Baseline",
    "CalibrationPrompt",
    "CalibrationRun",
    "CalibrationSet",
    "CallableRunner",
    "ClassifierJudge",
    "Directive",
    "DirectiveAction",
    "DriftReport",
    "Expect",
    "Flip",
    "ErrorSource",
    "HaltReason",
    "InconclusiveReason",
    "JudgeAudit",
    "Judge",
    "JudgeRef",
    "JudgedResponse",
    "Judgement",
    "KeywordJudge",
    "OpenAIRunner",
    "RateComparison",
    "Refused",
    "ResponseCache",
    "Runner",
    "TypedPrefixJudge",
    "Verdict",
    "arun_calibration",
    "baseline_record",
    "compare",
    "compare_counts",
    "default_cache_path",
    "get_judge",
    "import_xstest",
    "journal_record",
    "judge_names",
    "keyring_public_keys",
    "load_set",
    "mcnemar_exact",
    "min_attainable_p",
    "parse_set",
    "record_baseline",
    "render_html",
    "require_baseline",
    "run_calibration",
    "set_hash",
    "starter_set",
    "wilson_interval",
]
