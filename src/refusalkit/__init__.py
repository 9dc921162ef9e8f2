"""refusalkit: every "no" an AI system says, as a structured, redacted, journaled refusal.

The parts: ``refusalkit.model`` (records, no I/O), ``refusalkit.decide`` (the decision point),
``refusalkit.journal`` (the transparency log), ``refusalkit.chat`` (the chat turn guard),
``refusalkit.provenance`` (refusal drift), ``refusalkit.server`` (the HTTP service),
``refusalkit.client`` (its client) and ``refusalkit.integrations`` (agent frameworks); the errors
are in ``refusalkit.errors`` (docs/design/architecture.md). The root exports the records and each
part's main entry point; ``refusalkit.enforcer(policy=PATH, journal=STORE, keyring=PATH)`` is the
local ``Enforcer`` (docs/design/client.md)::

    import refusalkit

    keyring = refusalkit.Keyring.generate()
    point = refusalkit.DecisionPoint(refusalkit.load_pack("pack.yaml"), keyring)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from refusalkit._version import __version__
from refusalkit.errors import RefusalkitError
from refusalkit.keyring import Keyring
from refusalkit.model import Action, Decision, ReasonCode

if TYPE_CHECKING:
    from refusalkit.chat import ChatRuntime
    from refusalkit.decide import DecisionPoint, load_pack
    from refusalkit.enforce import enforcer
    from refusalkit.journal import open_journal, verify_receipt
    from refusalkit.provenance import compare, require_baseline

# The parts' entry points, imported on first use so `import refusalkit` stays light (PEP 562).
_LAZY = {
    "ChatRuntime": "refusalkit.chat",
    "DecisionPoint": "refusalkit.decide",
    "compare": "refusalkit.provenance",
    "enforcer": "refusalkit.enforce",
    "load_pack": "refusalkit.decide",
    "open_journal": "refusalkit.journal",
    "require_baseline": "refusalkit.provenance",
    "verify_receipt": "refusalkit.journal",
}


def __getattr__(name: str) -> Any:
    """Load a part's entry point on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'refusalkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Action",
    "ChatRuntime",
    "Decision",
    "DecisionPoint",
    "Keyring",
    "ReasonCode",
    "RefusalkitError",
    "__version__",
    "compare",
    "enforcer",
    "load_pack",
    "open_journal",
    "require_baseline",
    "verify_receipt",
]
