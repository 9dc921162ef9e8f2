"""The decision point: policy packs, the built-in engine, why-trails (docs/design/decision.md and
docs/design/policy.md).

>>> from refusalkit.decide import DecisionPoint, load_pack
>>> from refusalkit.examples import example_path
>>> from refusalkit.keyring import Keyring
>>> dp = DecisionPoint(load_pack(example_path("agent-tools.yaml")), Keyring.generate())
>>> dp.decide({"tool": "fs.write", "args": {"path": "/workspace/.env"}}).action
<Action.DENY: 'deny'>
"""

from __future__ import annotations

from refusalkit.decide._attest import mint_token, public_key_from_seed
from refusalkit.decide._cases import CaseResult, load_cases, run_cases
from refusalkit.decide._engine import DecisionPoint
from refusalkit.decide._explain import decide_lines, explain
from refusalkit.decide._lint import LintCode, LintWarning, lint_pack, lint_text
from refusalkit.decide._pack import Pack, load_pack
from refusalkit.decide._records import Subjects, make_decision, make_step
from refusalkit.decide._source import Lines, read_pack_source
from refusalkit.decide._stamps import stamp
from refusalkit.decide._wire import DecisionEncoder

__all__ = [
    "CaseResult",
    "DecisionEncoder",
    "DecisionPoint",
    "Lines",
    "LintCode",
    "LintWarning",
    "Pack",
    "Subjects",
    "decide_lines",
    "explain",
    "lint_pack",
    "lint_text",
    "load_cases",
    "load_pack",
    "make_decision",
    "make_step",
    "mint_token",
    "public_key_from_seed",
    "read_pack_source",
    "run_cases",
    "stamp",
]
