"""Refusal provenance: calibration runs, receipted baselines and drift verdicts
(docs/design/provenance.md).

Measure a model's refusal behaviour on a fixed calibration set, record a baseline in the journal
with a receipt, and later tell whether it drifted, in which direction, where, and how sure.
A rising refusal rate is ``more-restrictive``; a falling one ``more-permissive``.
"""

from refusalkit.provenance._baseline import Baseline, journal_record, record_baseline
from refusalkit.provenance._classifier import ClassifierJudge
from refusalkit.provenance._directive import Directive, DirectiveAction, HaltReason
from refusalkit.provenance._drift import DriftReport, Flip, compare
from refusalkit.provenance._execute import arun_calibration, run_calibration
from refusalkit.provenance._html import render_html
from refusalkit.provenance._importers import STARTER_SET_NAME, import_xstest, starter_set
from refusalkit.provenance._judges import (
    Judge,
    Judgement,
    JudgeRef,
    KeywordJudge,
    TypedPrefixJudge,
    get_judge,
    judge_names,
)
from refusalkit.provenance._require import require_baseline
from refusalkit.provenance._run import CalibrationRun, Outcome
from refusalkit.provenance._runners import CallableRunner, OpenAIRunner, Runner
from refusalkit.provenance._set import (
    CalibrationPrompt,
    CalibrationSet,
    Expect,
    load_set,
    parse_set,
)
from refusalkit.provenance._stats import mcnemar_exact, wilson_interval
from refusalkit.provenance._trust import keyring_public_keys
from refusalkit.provenance._verdict import (
    DEFAULT_MIN_PROMPTS,
    RateComparison,
    Verdict,
    compare_counts,
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
    "DirectiveAction",
    "DriftReport",
    "Expect",
    "Flip",
    "HaltReason",
    "Judge",
    "JudgeRef",
    "Judgement",
    "KeywordJudge",
    "OpenAIRunner",
    "Outcome",
    "RateComparison",
    "Runner",
    "TypedPrefixJudge",
    "Verdict",
    "arun_calibration",
    "compare",
    "compare_counts",
    "get_judge",
    "import_xstest",
    "journal_record",
    "judge_names",
    "keyring_public_keys",
    "load_set",
    "mcnemar_exact",
    "parse_set",
    "record_baseline",
    "render_html",
    "require_baseline",
    "run_calibration",
    "starter_set",
    "wilson_interval",
]
