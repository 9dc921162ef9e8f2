"""Witnesses for refusalkit journals: C2SP tlog-witness and tlog-cosignature (Ed25519).

A witness holds, per log origin, the latest checkpoint it cosigned, and cosigns a new one only
when an RFC 9162 consistency proof shows it extends that one. A log's checkpoint with a quorum of
cosignatures from independent witnesses cannot have been shown to anyone else with another
history (docs/design/witness.md)::

    witness = WitnessDir.init("w1", name="example.org/w1")
    witness.add_log("example.com/log", log_vkey)
    server = make_server(Witness(witness), "127.0.0.1", 0)
    note, outcomes = collect_cosignatures(note, [url], proof)
    verify_cosignatures(note, [witness.cosigner_key()])
"""

from __future__ import annotations

from refusalkit._deprecated import moved as _moved
from refusalkit.witness._client import (
    ProofSource,
    WitnessOutcome,
    collect_cosignatures,
    submit,
)
from refusalkit.witness._cosignature import (
    Cosignature,
    CosignerKey,
    cosign,
    parse_cosignature,
    verify_cosignatures,
    witnessed_sizes,
)
from refusalkit.witness._request import AddCheckpoint, RequestFormatError
from refusalkit.witness._server import HttpAnswer, Witness, make_server
from refusalkit.witness._state import WitnessDir

__all__ = [
    "AddCheckpoint",
    "Cosignature",
    "CosignerKey",
    "HttpAnswer",
    "ProofSource",
    "RequestFormatError",
    "Witness",
    "WitnessDir",
    "WitnessOutcome",
    "collect_cosignatures",
    "cosign",
    "make_server",
    "parse_cosignature",
    "submit",
    "verify_cosignatures",
    "witnessed_sizes",
]

# Renamed so that each public name has one meaning (docs/design/architecture.md, Names);
# importable, with a DeprecationWarning, until 0.3 (CHANGELOG.md).
__getattr__ = _moved(
    __name__,
    {
        "Answer": ("refusalkit.witness", "HttpAnswer"),
    },
)
