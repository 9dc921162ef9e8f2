"""Approval answers: the journaled, signed records of grants and denials (docs/design/approvals.md).

Pure data. An answer names the request it answers (its id and journal index), the exact action
(``action_digest``, the request's pack digest, tool, rule and agent), who answered and when, and,
for a grant, until when it may be used. It is signed with Ed25519 (RFC 8032) over the RFC 8785
form of the record without its ``signature`` member, by the keyring that journals it; the
journal's signed checkpoints then cover it like any entry.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from refusalkit.model import Subject, canonical_json

__all__ = ["DENIAL_SCHEMA", "GRANT_SCHEMA", "Answer", "AnswerKind"]

GRANT_SCHEMA = "refusalkit.approval-grant/v1"
DENIAL_SCHEMA = "refusalkit.approval-denial/v1"


class AnswerKind(StrEnum):
    """A grant lets the same action run once; a denial refuses the request."""

    GRANT = "grant"
    DENIAL = "denial"

    @property
    def schema(self) -> str:
        """The wire schema of answers of this kind."""
        return GRANT_SCHEMA if self is AnswerKind.GRANT else DENIAL_SCHEMA

    @classmethod
    def of_schema(cls, schema: Any) -> AnswerKind | None:
        """The kind whose schema is ``schema``, or None."""
        return {GRANT_SCHEMA: cls.GRANT, DENIAL_SCHEMA: cls.DENIAL}.get(schema)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class Answer:
    """A grant or a denial of one approval request (``refusalkit.approval-grant/v1`` or
    ``refusalkit.approval-denial/v1``)."""

    kind: AnswerKind
    answer_id: str
    request_id: str
    request_index: int
    action_digest: str
    policy_digest: str
    tool: str
    rule: str
    subject: Subject
    approver: str
    at: str
    expires_at: str | None = None  # grants only: the grant may not be used after it
    reason: str | None = None  # denials only, optional
    public_key: str | None = None  # base64 raw Ed25519 key that signed (set by ``signed``)
    signature: str | None = None

    def __post_init__(self) -> None:
        if not self.approver.strip():
            raise ValueError("an answer names its approver")
        if self.request_index < 0:
            raise ValueError("request_index must be a journal index (>= 0)")
        if (self.kind is AnswerKind.GRANT) != (self.expires_at is not None):
            raise ValueError("a grant has expires_at; a denial has none")

    def unsigned(self) -> dict[str, Any]:
        """The wire form without ``signature``: what the signature covers (as RFC 8785 bytes)."""
        out: dict[str, Any] = {
            "schema": self.kind.schema,
            "answer_id": self.answer_id,
            "request_id": self.request_id,
            "request_index": self.request_index,
            "action_digest": self.action_digest,
            "policy_digest": self.policy_digest,
            "tool": self.tool,
            "rule": self.rule,
            "subject": self.subject.to_dict(),
            "approver": self.approver,
            "at": self.at,
            "public_key": self.public_key,
        }
        if self.expires_at is not None:
            out["expires_at"] = self.expires_at
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {**self.unsigned(), "signature": self.signature}

    def signed(self, key: Ed25519PrivateKey) -> Answer:
        """This answer signed with ``key`` (its public key recorded in the answer)."""
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        bare = replace(self, public_key=_b64(public), signature=None)
        return replace(bare, signature=_b64(key.sign(canonical_json(bare.unsigned()))))

    def verify(self, public_key: bytes) -> bool:
        """Whether the signature is by ``public_key`` (32 raw bytes) over this answer."""
        if self.signature is None or self.public_key != _b64(public_key):
            return False
        try:
            signature = base64.b64decode(self.signature, validate=True)
            Ed25519PublicKey.from_public_bytes(public_key).verify(
                signature, canonical_json(self.unsigned())
            )
        except (InvalidSignature, ValueError, binascii.Error):
            return False
        return True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        """Rebuild from the wire form (``ValueError``/``KeyError``/``TypeError`` when malformed)."""
        kind = AnswerKind.of_schema(data.get("schema"))
        if kind is None:
            raise ValueError(f"not an approval answer (schema={data.get('schema')!r})")
        subject = data.get("subject") or {}
        return cls(
            kind=kind,
            answer_id=str(data["answer_id"]),
            request_id=str(data["request_id"]),
            request_index=int(data["request_index"]),
            action_digest=str(data["action_digest"]),
            policy_digest=str(data["policy_digest"]),
            tool=str(data["tool"]),
            rule=str(data["rule"]),
            subject=Subject(subject.get("agent"), subject.get("session")),
            approver=str(data["approver"]),
            at=str(data["at"]),
            expires_at=data.get("expires_at"),
            reason=data.get("reason"),
            public_key=data.get("public_key"),
            signature=data.get("signature"),
        )
