"""External policy engines behind refusalkit's decision contract (docs/engines.md).

Each adapter asks its engine and returns a full ``refusalkit.decision/v1`` record: the engine's
name and version, a digest of the policy source, a why-trail with redacted values, and
``deny`` + ``unavailable`` whenever the engine gives no clean verdict (fail closed).
"""

from __future__ import annotations

from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._agt import AGT_ACTIONS, AGT_DEFAULT_MAPPING, AgtAdapter
from refusalkit.engines._cedar import CEDAR_DEFAULT_MAPPING, CedarAdapter
from refusalkit.engines._mapping import EngineMapping, EntitySpec, load_mapping
from refusalkit.engines._opa import OpaAdapter
from refusalkit.engines._record import source_digest
from refusalkit.engines._rego import RegoAdapter
from refusalkit.engines._spec import EngineKind, EngineSpec, open_engine

__all__ = [
    "AGT_ACTIONS",
    "AGT_DEFAULT_MAPPING",
    "CEDAR_DEFAULT_MAPPING",
    "Adapter",
    "AdapterFailure",
    "AgtAdapter",
    "CedarAdapter",
    "EngineKind",
    "EngineMapping",
    "EngineSpec",
    "EntitySpec",
    "OpaAdapter",
    "RegoAdapter",
    "load_mapping",
    "open_engine",
    "source_digest",
]
