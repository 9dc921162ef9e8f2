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

from refusalkit._deprecated import moved as _moved
from refusalkit.decide._attest import mint_token, public_key_from_seed
from refusalkit.decide._cases import CaseResult, load_cases, run_cases
from refusalkit.decide._engine import DecisionPoint
from refusalkit.decide._explain import decide_lines, explain
from refusalkit.decide._lint import LintCode, LintWarning, lint_pack, lint_text
from refusalkit.decide._pack import Pack, load_pack
from refusalkit.decide._wire import DecisionEncoder

__all__ = [
    "CaseResult",
    "DecisionEncoder",
    "DecisionPoint",
    "LintCode",
    "LintWarning",
    "Pack",
    "decide_lines",
    "explain",
    "lint_pack",
    "lint_text",
    "load_cases",
    "load_pack",
    "mint_token",
    "public_key_from_seed",
    "run_cases",
]

# Exported only for refusalkit.engines, which now takes them from the shared internal layer;
# importable, with a DeprecationWarning, until 0.3 (CHANGELOG.md). ``make_decision`` resolves to
# a builder that validates through ``Decision(...)``.
__getattr__ = _moved(
    __name__,
    {
        "Lines": ("refusalkit._internal.source", "Lines"),
        "Subjects": ("refusalkit._internal.records", "Subjects"),
        "make_decision": ("refusalkit._internal.records", "checked_decision"),
        "make_step": ("refusalkit._internal.records", "make_step"),
        "read_pack_source": ("refusalkit._internal.source", "read_pack_source"),
        "stamp": ("refusalkit._internal.stamps", "stamp"),
    },
)
