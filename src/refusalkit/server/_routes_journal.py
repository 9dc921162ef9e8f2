"""Read the journal over HTTP: checkpoint, entries, proofs, receipts, stats, decisions.

Proofs are the store's RFC 9162 proofs (§2.1.3 inclusion, §2.1.4 consistency); a client checks
them against the signed checkpoint with nothing but the journal's offline verifier.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request

from refusalkit._internal.keys import ApiKey, Scope
from refusalkit.errors import JournalError, VerificationError
from refusalkit.journal import Journal
from refusalkit.model import Action, ReasonCode
from refusalkit.server._auth import require
from refusalkit.server._errors import ApiError, ErrorCode
from refusalkit.server._models import (
    CheckpointModel,
    ConsistencyProofModel,
    DecisionItemModel,
    DecisionsPageModel,
    EntriesModel,
    EntryModel,
    ErrorModel,
    InclusionProofModel,
    ReceiptModel,
    StatsModel,
)
from refusalkit.server._service import Service
from refusalkit.server._timewin import window

__all__ = ["parse_checkpoint", "router"]

router = APIRouter(prefix="/v1", tags=["journal"])
_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorModel},
    403: {"model": ErrorModel},
    422: {"model": ErrorModel},
    503: {"model": ErrorModel},
}
_PROOF_ERRORS: dict[int | str, dict[str, Any]] = {**_ERRORS, 400: {"model": ErrorModel}}
Reader = Annotated[ApiKey, Depends(require(Scope.READ))]
Index = Annotated[int, Query(ge=0, le=2**62)]


def _svc(request: Request) -> Service:
    service: Service = request.app.state.service
    return service


async def _read(service: Service, fn: Any) -> Any:
    try:
        return await service.journal.read(fn)
    except JournalError as exc:
        raise ApiError(400, ErrorCode.PROOF_UNAVAILABLE, exc.message, exc.hint) from exc
    except Exception as exc:
        raise ApiError(
            503,
            ErrorCode.JOURNAL_UNAVAILABLE,
            f"the journal cannot be read ({type(exc).__name__})",
            "Retry later; check the store.",
        ) from exc


def parse_checkpoint(text: str, public_key: bytes) -> CheckpointModel:
    """The fields of a C2SP tlog-checkpoint body (origin, size, base64 root)."""
    lines = text.split("\n")
    signers = [line.split(" ")[1] for line in lines if line.startswith("\u2014 ")]
    return CheckpointModel(
        checkpoint=text,
        origin=lines[0],
        tree_size=int(lines[1]),
        root_hash=lines[2],
        key_name=signers[0] if signers else "",
        public_key=base64.b64encode(public_key).decode("ascii"),
    )


def _latest(journal: Journal) -> tuple[str | None, bytes]:
    return journal.latest_checkpoint(), journal.public_key_bytes()


@router.get("/journal/checkpoint", response_model=CheckpointModel, responses=_ERRORS)
async def checkpoint(request: Request, _: Reader) -> CheckpointModel:
    """The latest signed checkpoint, with any witness cosignatures. Reading never signs: the
    service signs on its schedule (`--checkpoint-every`) and on the admin call."""
    service = _svc(request)
    text, key = await _read(service, _latest)
    if text is None:
        raise ApiError(
            503,
            ErrorCode.JOURNAL_UNAVAILABLE,
            "no checkpoint has been signed yet",
            f"The service signs every {service.config.checkpoint_every:g} s; see its log if none "
            "appears.",
        )
    return parse_checkpoint(text, key)


@router.post(
    "/admin/journal/checkpoint",
    response_model=CheckpointModel,
    responses={**_ERRORS, 409: {"model": ErrorModel}},
    tags=["admin"],
)
async def sign_checkpoint(
    request: Request, _: Annotated[ApiKey, Depends(require(Scope.ADMIN))]
) -> CheckpointModel:
    """Sign a checkpoint of the current tree now (and have it witnessed); the operator's act.

    Refused (409) when the store's tree does not extend the last checkpoint this signer signed.
    """
    service = _svc(request)
    try:
        text = await service.checkpoints.sign_now(force=True)
    except VerificationError as exc:
        raise ApiError(409, ErrorCode.PROOF_UNAVAILABLE, exc.message, exc.hint or "") from exc
    except Exception as exc:
        raise ApiError(
            503,
            ErrorCode.JOURNAL_UNAVAILABLE,
            f"no checkpoint could be signed ({exc})",
            "Retry later; check the store and the keyring.",
        ) from exc
    key = await _read(service, lambda j: j.public_key_bytes())
    return parse_checkpoint(text, key)


@router.get("/journal/entries", response_model=EntriesModel, responses=_PROOF_ERRORS)
async def entries(request: Request, _: Reader, start: Index, end: Index) -> EntriesModel:
    """Entries `[start, end)`, at most `max_entries_page` of them (the answer's `end` says)."""
    service = _svc(request)
    size: int = await _read(service, lambda j: j.size())
    end = min(end, size, start + service.config.max_entries_page)
    if start > end:
        raise ApiError(
            400,
            ErrorCode.PROOF_UNAVAILABLE,
            f"start {start} is past the end ({end}) of the log",
            f"Ask for 0 <= start <= end <= {size}.",
        )
    raw: list[bytes] = await _read(service, lambda j: j.entries(start, end))
    items = [
        EntryModel(
            index=start + i, entry_b64=base64.b64encode(b).decode("ascii"), record=orjson.loads(b)
        )
        for i, b in enumerate(raw)
    ]
    return EntriesModel(start=start, end=end, entries=items)


@router.get("/journal/proof/inclusion", response_model=InclusionProofModel, responses=_PROOF_ERRORS)
async def inclusion(
    request: Request,
    _: Reader,
    index: Index,
    size: Annotated[int | None, Query(ge=1, le=2**62)] = None,
) -> InclusionProofModel:
    """RFC 9162 §2.1.3 inclusion proof of entry `index` in the tree of `size` (default: current)."""
    proof = await _read(_svc(request), lambda j: j.inclusion_proof(index, size))
    return InclusionProofModel(**proof)


@router.get(
    "/journal/proof/consistency", response_model=ConsistencyProofModel, responses=_PROOF_ERRORS
)
async def consistency(
    request: Request,
    _: Reader,
    old: Index,
    new: Annotated[int | None, Query(ge=0, le=2**62)] = None,
) -> ConsistencyProofModel:
    """RFC 9162 §2.1.4 consistency proof from tree size `old` to `new` (default: current)."""
    proof = await _read(_svc(request), lambda j: j.consistency_proof(old, new))
    return ConsistencyProofModel(**proof)


@router.get("/journal/receipt", response_model=ReceiptModel, responses=_PROOF_ERRORS)
async def receipt(request: Request, _: Reader, index: Index) -> ReceiptModel:
    """A receipt for entry `index`: its inclusion proof against the latest signed checkpoint
    (400 until a checkpoint covers the entry; reading never signs)."""
    service = _svc(request)
    try:
        found = await service.journal.read(lambda j: j.receipt(index, sign=False))
    except JournalError as exc:
        raise ApiError(400, ErrorCode.PROOF_UNAVAILABLE, exc.message, exc.hint) from exc
    return ReceiptModel(**found.to_dict())


@router.get("/stats", response_model=StatsModel, responses=_ERRORS, tags=["query"])
async def stats(
    request: Request,
    _: Reader,
    since: str | None = None,
    until: str | None = None,
    last: Annotated[
        str | None, Query(description="A duration back from now: 15m, 24h, 7d.")
    ] = None,
) -> StatsModel:
    """Decision counts by action, reason code and rule over a time window."""
    lo, hi = window(since, until, last)
    counts = await _read(_svc(request), lambda j: j.stats(since=lo, until=hi))
    return StatsModel(
        since=lo,
        until=hi,
        total=int(counts.get("total", 0)),
        by_action=dict(counts.get("by_action", {})),
        by_reason_code=dict(counts.get("by_reason_code", {})),
        by_rule=dict(counts.get("by_rule", {})),
        by_schema=dict(counts.get("by_schema", {})),
    )


@router.get("/decisions", response_model=DecisionsPageModel, responses=_ERRORS, tags=["query"])
async def decisions(
    request: Request,
    _: Reader,
    *,
    schema: str = "refusalkit.decision/v1",
    action: Action | None = None,
    reason_code: ReasonCode | None = None,
    matched_rule: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    since: str | None = None,
    until: str | None = None,
    last: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> DecisionsPageModel:
    """Journal records matching every filter given (the `journal query` filters), oldest first."""
    lo, hi = window(since, until, last)

    def run(j: Journal) -> list[tuple[int, dict[str, Any]]]:
        found = j.query(
            schema=schema,
            action=action.value if action else None,
            reason_code=reason_code.value if reason_code else None,
            matched_rule=matched_rule,
            agent=agent,
            session=session,
            since=lo,
            until=hi,
            limit=limit + 1,
        )
        return list(found)

    rows = await _read(_svc(request), run)
    items = [DecisionItemModel(index=i, record=r) for i, r in rows[:limit]]
    return DecisionsPageModel(items=items, truncated=len(rows) > limit)
