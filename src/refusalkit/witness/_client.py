"""Ask witnesses to cosign a checkpoint (C2SP tlog-witness client side), with httpx.

Each witness is first asked with the old size the client last saw it at (0 at first); a 409
answer names the witness's size, and the request is made again with a consistency proof from
that size. The cosignature lines returned are appended to the note; verifiers check them against
the witness keys they trust.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from refusalkit.errors import VerificationError
from refusalkit.journal import NoteSignature, parse_checkpoint_body, parse_note
from refusalkit.witness._request import AddCheckpoint

__all__ = ["ProofSource", "WitnessOutcome", "collect_cosignatures", "submit"]

ProofSource = Callable[[int, int], list[bytes]]
"""``(old, new) -> consistency proof hashes`` from the log (RFC 9162 §2.1.4)."""


@dataclass(frozen=True, slots=True)
class WitnessOutcome:
    """What one witness answered: its cosignature lines, or why there are none."""

    url: str
    lines: tuple[NoteSignature, ...] = ()
    error: str | None = None
    witness_size: int | None = None


def _lines(text: str) -> tuple[NoteSignature, ...]:
    _, signatures = parse_note(f"x\n\n{text}")
    return tuple(signatures)


def submit(
    client: httpx.Client, url: str, note: str, proof: ProofSource, old: int = 0
) -> WitnessOutcome:
    """One witness: ``add-checkpoint``, retried once at the size a 409 names."""
    size = parse_checkpoint_body(parse_note(note)[0]).size
    for _ in range(2):
        hashes = proof(old, size) if 0 < old < size else []
        body = AddCheckpoint(old, tuple(hashes), note).to_body()
        try:
            answer = client.post(f"{url.rstrip('/')}/add-checkpoint", content=body)
        except httpx.HTTPError as exc:
            return WitnessOutcome(url, error=f"unreachable: {exc}")
        if answer.status_code == 409:
            text = answer.text.strip()
            old = int(text) if text.isdigit() else -1
            if not 0 <= old <= size:
                return WitnessOutcome(
                    url, error=f"the witness has seen size {text}", witness_size=old
                )
            continue
        if answer.status_code != 200:
            return WitnessOutcome(url, error=f"{answer.status_code}: {answer.text.strip()[:300]}")
        try:
            return WitnessOutcome(url, _lines(answer.text), witness_size=size)
        except VerificationError as exc:
            return WitnessOutcome(url, error=f"malformed answer: {exc.message}")
    return WitnessOutcome(url, error="the witness's size kept changing")


def collect_cosignatures(
    note: str, urls: Sequence[str], proof: ProofSource, *, timeout: float = 10.0
) -> tuple[str, list[WitnessOutcome]]:
    """Ask every witness in ``urls``; returns ``note`` with the cosignature lines appended."""
    text, signatures = parse_note(note)
    with httpx.Client(timeout=timeout) as client:
        outcomes = [submit(client, url, note, proof) for url in urls]
    merged = list(signatures)
    for outcome in outcomes:
        merged += [line for line in outcome.lines if line not in merged]
    return f"{text}\n{''.join(s.line() for s in merged)}", outcomes
