"""Ask witnesses to cosign a checkpoint (C2SP tlog-witness client side), with httpx.

Each witness is first asked with the old size the client last saw it at (0 at first); a 409
answer names the witness's size, and the request is made again with a consistency proof from
that size. The cosignature lines returned are appended to the note; verifiers check them against
the witness keys they trust.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import httpx

from refusalkit.errors import VerificationError
from refusalkit.journal import NoteSignature, parse_checkpoint_body, parse_note
from refusalkit.witness._cosignature import CosignerKey, valid_cosigners
from refusalkit.witness._request import AddCheckpoint

log = logging.getLogger("refusalkit.witness.client")

__all__ = ["ProofSource", "WitnessOutcome", "collect_cosignatures", "submit"]

ProofSource = Callable[[int, int], list[bytes]]
"""``(old, new) -> consistency proof hashes`` from the log (RFC 9162 §2.1.4)."""


@dataclass(frozen=True, slots=True)
class WitnessOutcome:
    """What one witness answered: its cosignature lines that verify, or why there are none;
    ``dropped`` names the lines it returned that were not kept."""

    url: str
    lines: tuple[NoteSignature, ...] = ()
    error: str | None = None
    witness_size: int | None = None
    dropped: tuple[str, ...] = ()


def _keep_verified(outcome: WitnessOutcome, note: str, key: CosignerKey) -> WitnessOutcome:
    """Only the lines by ``key`` (the witness asked) that verify against ``note``."""
    if outcome.error:
        return outcome
    text = parse_note(note)[0]
    kept: list[NoteSignature] = []
    dropped: list[NoteSignature] = []
    for line in outcome.lines:
        ok = (line.name, line.key_id) == (key.name, key.key_id) and valid_cosigners(
            f"{text}\n{line.line()}", [key]
        )
        (kept if ok else dropped).append(line)
    names = tuple(f"{line.name}+{line.key_id:08x}" for line in dropped)
    for name in names:
        log.warning("dropped a line from witness %s: %s is not a valid cosignature by %s+%08x",
                    outcome.url, name, key.name, key.key_id)  # fmt: skip
    if not kept:
        error = f"answered no valid cosignature by {key.name}+{key.key_id:08x}"
        return WitnessOutcome(outcome.url, (), error, outcome.witness_size, names)
    return WitnessOutcome(outcome.url, tuple(kept), None, outcome.witness_size, names)


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
    note: str,
    witnesses: Sequence[tuple[str, CosignerKey]],
    proof: ProofSource,
    *,
    timeout: float = 10.0,
) -> tuple[str, list[WitnessOutcome]]:
    """Ask every witness ``(url, its cosigner key)``; returns ``note`` with the lines appended
    that each witness signed under its configured key and that verify (others are dropped)."""
    text, signatures = parse_note(note)
    with httpx.Client(timeout=timeout) as client:
        outcomes = [
            _keep_verified(submit(client, url, note, proof), note, key) for url, key in witnesses
        ]
    merged = list(signatures)
    for outcome in outcomes:
        merged += [line for line in outcome.lines if line not in merged]
    return f"{text}\n{''.join(s.line() for s in merged)}", outcomes
