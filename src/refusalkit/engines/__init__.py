"""External policy engines behind refusalkit's decision contract (docs/engines.md).

Each adapter asks its engine and returns a full ``refusalkit.decision/v1`` record: the engine's
name and version, a digest of the policy source, a why-trail with redacted values, and
``deny`` + ``unavailable`` whenever the engine gives no clean verdict (fail closed); a malformed
request is ``deny`` + ``input-rejected`` by ``@request``, as in the built-in engine.
"""

from __future__ import annotations

from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._agt import AgtAdapter
from refusalkit.engines._cedar import CedarAdapter
from refusalkit.engines._mapping import EngineMapping, load_mapping
from refusalkit.engines._opa import OpaAdapter
from refusalkit.engines._rego import RegoAdapter
from refusalkit.engines._spec import EngineKind, EngineSpec, open_engine

__all__ = [
    "Adapter",
    "AdapterFailure",
    "AgtAdapter",
    "CedarAdapter",
    "EngineKind",
    "EngineMapping",
    "EngineSpec",
    "OpaAdapter",
    "RegoAdapter",
    "load_mapping",
    "open_engine",
]
