"""The journal as C2SP tlog-tiles under ``/v1/journal/tlog/`` (c2sp.org/tlog-tiles), read scope.

``checkpoint`` is the latest signed checkpoint (mutable: cached a few seconds at most);
``tile/<L>/<N>[.p/<W>]`` and ``tile/entries/<N>[.p/<W>]`` are read from the store for the tree of
that checkpoint's size (immutable: long-lived caching; entry bundles gzip-encoded). A tile the
signed tree does not contain is a 404, never a guess at a tree not yet signed.
"""

from __future__ import annotations

import gzip
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from refusalkit._internal.keys import ApiKey, Scope
from refusalkit.journal import Journal, parse_tile_path, read_tile
from refusalkit.server._auth import require
from refusalkit.server._errors import ApiError, ErrorCode
from refusalkit.server._routes_journal import _read, _svc

__all__ = ["router"]

router = APIRouter(prefix="/v1/journal/tlog", tags=["journal"])
Reader = Annotated[ApiKey, Depends(require(Scope.READ))]
IMMUTABLE = "private, max-age=31536000, immutable"  # behind the read scope: never a shared cache
MUTABLE = "private, max-age=5"
_OCTETS: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {}}},
    404: {"description": "not a tile of the signed tree"},
}


def _head(journal: Journal) -> str | None:
    return journal.latest_checkpoint()


async def _signed(request: Request) -> str:
    note: str | None = await _read(_svc(request), _head)
    if note is None:
        raise ApiError(
            503, ErrorCode.JOURNAL_UNAVAILABLE, "no checkpoint has been signed yet",
            "The service signs on its schedule; see its log if none appears.",
        )  # fmt: skip
    return note


@router.get(
    "/checkpoint",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}},
)
async def tlog_checkpoint(request: Request, _: Reader) -> Response:
    """The latest signed checkpoint (C2SP tlog-checkpoint), with any cosignatures."""
    note = await _signed(request)
    return Response(
        note, media_type="text/plain; charset=utf-8", headers={"Cache-Control": MUTABLE}
    )


@router.get("/tile/{path:path}", response_class=Response, responses=_OCTETS)
async def tlog_tile(path: str, request: Request, _: Reader) -> Response:
    """A Merkle tree tile or an entry bundle of the signed tree (C2SP tlog-tiles)."""
    parsed = parse_tile_path(path)
    if parsed is None:
        raise ApiError(
            404, ErrorCode.NOT_FOUND, f"tile/{path[:80]} is not a tlog-tiles path",
            "Paths are tile/<L>/<N>[.p/<W>] and tile/entries/<N>[.p/<W>] (c2sp.org/tlog-tiles).",
        )  # fmt: skip
    level, index, width = parsed
    size = int((await _signed(request)).split("\n")[1])
    data: bytes | None = await _read(
        _svc(request), lambda j: read_tile(j, level, index, width, size)
    )
    if data is None:
        raise ApiError(
            404, ErrorCode.NOT_FOUND, f"tile/{path} is not in the signed tree of size {size}",
            "Fetch the checkpoint first and only the tiles its size needs.",
        )  # fmt: skip
    headers = {"Cache-Control": IMMUTABLE}
    if level == "entries":
        data, headers["Content-Encoding"] = gzip.compress(data, mtime=0), "gzip"
    return Response(data, media_type="application/octet-stream", headers=headers)
