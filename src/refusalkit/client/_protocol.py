"""The client's wire protocol, without I/O: request bodies in, typed answers out.

Shared by ``Client`` and ``AsyncClient`` so the two cannot drift. Each answer is classified as a
decision, a failure worth retrying (transport error, 429, 502-504, a ``retryable`` decision) or a
final failure (401, 403, 413, 422, an answer that is not a decision); every failure becomes a
fail-closed decision at the edge (docs/design/client.md).
"""

from __future__ import annotations

import base64
import binascii
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from refusalkit._internal.binding import batch_bindings, decide_binding
from refusalkit.client._decode import decode_batch, decode_decision
from refusalkit.errors import ServiceError, UsageError, VerificationError
from refusalkit.journal import (
    Checkpoint,
    NoteVerifier,
    Receipt,
    open_checkpoint,
    verify_consistency,
    verify_receipt,
)
from refusalkit.model import Decision, ReasonCode, canonical_json

__all__ = [
    "RETRY_STATUSES",
    "Attempts",
    "Failure",
    "Settings",
    "Setup",
    "any_retryable",
    "batch_answer",
    "bound_batch",
    "bound_decision",
    "check_consistency",
    "check_receipt",
    "chunks",
    "decision_answer",
    "encode",
    "failure_of",
    "first_retryable",
    "headers",
    "need_key",
    "needs_consistency",
    "open_signed_checkpoint",
    "pinned_key",
    "read_answer",
    "refusal_problem",
    "should_retry",
    "unreachable",
]

RETRY_STATUSES = frozenset({429, 502, 503, 504})
INDEX_HEADER = "refusalkit-journal-index"


class Failure(Exception):  # noqa: N818 (an outcome, raised only inside the client)
    """No decision came back: ``problem`` says why (no request value in it); ``retry`` whether
    another attempt may help; ``wait`` a server-asked delay in seconds (``Retry-After``)."""

    def __init__(self, problem: str, retry: bool, wait: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry = retry
        self.wait = wait


@dataclass(frozen=True, slots=True)
class Settings:
    """Timeouts, retries and backoff (full jitter, as in exponential-backoff practice)."""

    timeout: float = 2.0
    retries: int = 2
    backoff: float = 0.05
    max_backoff: float = 1.0
    batch_size: int = 1000

    def delay(self, attempt: int, wait: float | None) -> float:
        """Seconds to sleep before retry ``attempt`` (1-based); a server's wait is capped."""
        if wait is not None:
            return min(max(wait, 0.0), self.max_backoff)
        ceiling = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return random.uniform(0.0, ceiling)  # noqa: S311 (jitter, not secrecy)


@dataclass(frozen=True, slots=True)
class Setup:
    """What both clients are made of: the retry settings, the pinned journal, the headers."""

    settings: Settings
    public_key: bytes | None
    origin: str | None
    read_headers: dict[str, str]
    http: dict[str, Any]  # keyword arguments of httpx.Client / httpx.AsyncClient

    @classmethod
    def make(
        cls,
        url: str,
        *,
        api_key: str | None,
        read_key: str | None,
        public_key: bytes | str | None,
        origin: str | None,
        settings: Settings,
    ) -> Setup:
        """Checks the pinned key and the API keys (``UsageError``) and builds the headers."""
        http = {
            "base_url": url.rstrip("/"),
            "headers": {**headers(api_key), "Content-Type": "application/json"},
            "timeout": settings.timeout,
        }
        return cls(settings, pinned_key(public_key), origin, headers(read_key or api_key), http)


def needs_consistency(old: Checkpoint | None, new: Checkpoint) -> bool:
    """Whether ``new`` must be proven to extend ``old`` (the last checkpoint seen)."""
    return old is not None and old.size > 0 and (old.size, old.root) != (new.size, new.root)


class Attempts:
    """The retry plan of one call: after each outcome, the delay before the next attempt, or
    the end (``None`` to keep an answer; the failure re-raised when retries are spent)."""

    __slots__ = ("_attempt", "_retry_if", "_settings")

    def __init__(self, settings: Settings, retry_if: Callable[[Any], bool]) -> None:
        self._settings = settings
        self._retry_if = retry_if
        self._attempt = 0

    def _next(self, wait: float | None) -> float:
        self._attempt += 1
        return self._settings.delay(self._attempt, wait)

    def after_answer(self, found: Any) -> float | None:
        """``None`` to keep ``found``, else the delay before asking again."""
        if self._attempt >= self._settings.retries or not self._retry_if(found):
            return None
        return self._next(None)

    def after_failure(self, failure: Failure) -> float:
        """The delay before the next attempt; re-raises ``failure`` when it is final."""
        if not failure.retry or self._attempt >= self._settings.retries:
            raise failure
        return self._next(failure.wait)


def encode(payload: Any) -> bytes:
    """JSON bytes of a request or batch; ``Failure`` for a value JSON cannot carry."""
    try:
        return orjson.dumps(payload)
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise Failure(f"the request is not JSON ({type(exc).__name__})", retry=False) from exc


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def failure_of(response: httpx.Response) -> Failure:
    """The failure a non-200 answer stands for, naming the API's error ``code``."""
    code = "unknown"
    try:
        error = orjson.loads(response.content).get("error", {})
        code = str(error.get("code", code))[:64]
    except (orjson.JSONDecodeError, AttributeError):
        pass
    retry = response.status_code in RETRY_STATUSES
    problem = f"the service answered HTTP {response.status_code} ({code})"
    return Failure(problem, retry=retry, wait=_retry_after(response))


def _decision(data: Any) -> Decision:
    try:
        return Decision.from_dict(data)
    except Exception as exc:  # any malformed answer is a failure, never a decision
        raise Failure(
            f"the service's answer is not a decision ({type(exc).__name__})", retry=False
        ) from exc


def _json(response: httpx.Response) -> Any:
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise Failure("the service's answer is not JSON", retry=False) from exc


def decision_answer(response: httpx.Response) -> tuple[Decision, int | None]:
    """The decision of a ``POST /v1/decide`` answer and its journal index."""
    if response.status_code != 200:
        raise failure_of(response)
    try:
        decision = decode_decision(response.content)
    except Exception:  # noqa: BLE001 (the general path names what does not fit, or accepts it)
        decision = _decision(_json(response))
    raw = response.headers.get(INDEX_HEADER)
    index = int(raw) if raw is not None and raw.isdigit() else None
    return decision, index


def batch_answer(response: httpx.Response, count: int) -> list[tuple[Decision, int | None]]:
    """The decisions of a ``POST /v1/decide/batch`` answer, in order, with their indices."""
    if response.status_code != 200:
        raise failure_of(response)
    try:
        fast, fast_indices = decode_batch(response.content)
    except Exception:  # noqa: BLE001 (the general path names what does not fit, or accepts it)
        return _general_batch(response, count)
    if len(fast) != count:
        raise Failure(f"the service answered a batch of {count} with another count", retry=False)
    if fast_indices is None or len(fast_indices) != count:
        fast_indices = [None] * count
    return list(zip(fast, fast_indices, strict=True))


def _general_batch(response: httpx.Response, count: int) -> list[tuple[Decision, int | None]]:
    data = _json(response)
    decisions = data.get("decisions") if isinstance(data, dict) else None
    indices = data.get("indices") if isinstance(data, dict) else None
    if not isinstance(decisions, list) or len(decisions) != count:
        raise Failure(f"the service answered a batch of {count} with another count", retry=False)
    if not isinstance(indices, list) or len(indices) != count:
        indices = [None] * count
    return [
        (_decision(d), i if isinstance(i, int) else None)
        for d, i in zip(decisions, indices, strict=True)
    ]


def _not_ours(what: str) -> Failure:
    return Failure(
        f"the service's answer is not bound to this request ({what}): replayed or altered"
        " on the way",
        retry=False,
    )


def bound_decision(
    found: tuple[Decision, int | None], request_id: str, body: bytes
) -> tuple[Decision, int | None]:
    """``found`` if its decision is bound to this call (docs/design/client.md, Answers bound to
    requests), else a final ``Failure``: the answer to another request, or to none of ours."""
    if found[0].client_request_id != decide_binding(request_id, body):
        raise _not_ours("its client_request_id is not this call's")
    return found


def bound_batch(
    found: list[tuple[Decision, int | None]], request_id: str, body: bytes
) -> list[tuple[Decision, int | None]]:
    """``found`` if each decision is bound to its place in this batch call, else ``Failure``."""
    for (decision, _), binding in zip(found, batch_bindings(request_id, body), strict=False):
        if decision.client_request_id != binding:
            raise _not_ours("a client_request_id is not this batch's at its place")
    return found


def should_retry(decision: Decision) -> bool:
    """A decision worth asking again for unchanged: ``unavailable`` (the service failed closed).

    ``attestation-failed`` is retryable only after re-attesting, which the caller must do, so
    the same request is not sent again.
    """
    return decision.reason_code is ReasonCode.UNAVAILABLE


def chunks(requests: Sequence[Mapping[str, Any]], size: int) -> list[Sequence[Mapping[str, Any]]]:
    """``requests`` in slices of at most ``size`` (none for no requests)."""
    size = max(1, size)
    return [requests[i : i + size] for i in range(0, len(requests), size)]


def first_retryable(found: tuple[Decision, int | None]) -> bool:
    """Whether one decide answer is worth asking again."""
    return should_retry(found[0])


def any_retryable(found: list[tuple[Decision, int | None]]) -> bool:
    """Whether a batch answer holds a decision worth asking again (the batch is re-sent)."""
    return any(should_retry(d) for d, _ in found)


def headers(api_key: str | None) -> dict[str, str]:
    """The bearer header of an API key (none without one), RFC 6750 §2.1.

    The key must be visible ASCII with no blank inside (blanks around it are dropped, as the
    service does); a key given with its ``Bearer`` scheme, or one no header can carry, is a
    ``UsageError`` here rather than a 401 on every call.
    """
    key = (api_key or "").strip()
    if not key:
        return {}
    scheme, _, rest = key.partition(" ")
    if rest and scheme.lower() == "bearer":
        raise UsageError(
            "the API key includes the 'Bearer' scheme",
            hint="Pass the key alone; the client sends `Authorization: Bearer <key>`.",
        )
    if not all("!" <= c <= "~" for c in key):
        raise UsageError(
            "the API key must be visible ASCII with no blank inside",
            hint="Pass the key `refusalkit service keys add` printed, as it is.",
        )
    return {"Authorization": f"Bearer {key}"}


def pinned_key(public_key: bytes | str | None) -> bytes | None:
    """32 raw Ed25519 bytes from raw bytes or base64 text; ``UsageError`` otherwise."""
    if public_key is None:
        return None
    raw = public_key
    if isinstance(public_key, str):
        try:
            raw = base64.b64decode(public_key, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise UsageError("the pinned public key is not base64") from exc
    if not isinstance(raw, bytes) or len(raw) != 32:
        raise UsageError(
            "the pinned public key must be 32 raw Ed25519 bytes",
            hint="Use the journal's key: `Keyring.public_key_bytes()` or the base64 text.",
        )
    return raw


def need_key(public_key: bytes | None) -> bytes:
    """The pinned key, or a ``UsageError``: a proof checked with the server's own key proves
    nothing about who signed it."""
    if public_key is None:
        raise UsageError(
            "no journal public key is pinned, so the proof cannot be checked",
            hint="Pass public_key= (the journal's Ed25519 key, obtained out of band) to Client.",
        )
    return public_key


def open_signed_checkpoint(
    data: Any, public_key: bytes, origin: str | None
) -> tuple[str, Checkpoint]:
    """The checkpoint of a ``GET /v1/journal/checkpoint`` answer, verified with the pinned key."""
    if not isinstance(data, Mapping) or not isinstance(data.get("checkpoint"), str):
        raise VerificationError("the service's checkpoint answer has no checkpoint text")
    text: str = data["checkpoint"]
    name = str(data.get("key_name") or text.split("\n", 1)[0])
    try:
        verifier = NoteVerifier.for_key(name, public_key)
    except UsageError as exc:
        raise VerificationError(f"checkpoint key: {exc.message}") from exc
    return text, open_checkpoint(text, [verifier], origin=origin)


def check_consistency(old: Checkpoint, new: Checkpoint, data: Any) -> None:
    """RFC 9162 §2.1.4.2: the newer checkpoint's tree extends the one seen before."""
    hashes: Sequence[Any] = data.get("hashes", []) if isinstance(data, Mapping) else []
    try:
        proof = [bytes.fromhex(str(h)) for h in hashes]
    except ValueError as exc:
        raise VerificationError("the consistency proof is not hex") from exc
    verify_consistency(old.size, new.size, proof, old.root, new.root)


def check_receipt(
    decision: Decision, data: Any, public_key: bytes, origin: str | None, index: int
) -> Receipt:
    """The receipt of ``decision``'s entry, verified offline with the pinned key.

    The entry bytes are recomputed from the decision held (RFC 8785), so a pass proves that
    this very record, not merely some record, is at ``index`` in the signed log.
    """
    receipt = Receipt.from_dict(data if isinstance(data, Mapping) else {})
    if receipt.index != index:
        raise VerificationError(f"asked for the receipt of {index}, got {receipt.index}")
    if origin is not None and receipt.origin != origin:
        raise VerificationError(f"the receipt is from origin {receipt.origin!r}, not {origin!r}")
    verify_receipt(canonical_json(decision.to_dict()), receipt, public_key=public_key)
    return receipt


def refusal_problem(exc: Exception) -> str:
    """What went wrong, for the ``@unavailable`` step: a ``Failure``'s own words, else only the
    error's type (its message might quote the request)."""
    if isinstance(exc, Failure):
        return exc.problem
    return f"the client failed ({type(exc).__name__})"


def unreachable(exc: Exception) -> ServiceError:
    """The error of a journal read that never got an answer."""
    return ServiceError(
        f"the service cannot be reached ({type(exc).__name__})",
        hint="Check the URL and that `refusalkit serve` is running; retry later.",
    )


def read_answer(response: httpx.Response) -> Any:
    """The JSON of a journal read's 200 answer; ``ServiceError`` naming the API's error code."""
    if response.status_code != 200:
        raise ServiceError(
            failure_of(response).problem,
            hint="Check that the API key has the `read` scope and the index exists.",
        )
    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        raise ServiceError("the service's answer is not JSON") from exc
