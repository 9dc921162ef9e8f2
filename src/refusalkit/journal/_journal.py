"""The journal: a tamper-evident transparency log of records (docs/design/journal.md).

``open_journal`` opens (or creates) a store; ``Journal`` appends records as RFC 8785 entries,
signs C2SP checkpoints with the keyring's Ed25519 key (key name = origin), serves RFC 9162
inclusion and consistency proofs and receipts, and verifies the whole log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from refusalkit.errors import KeyringError, ProofError, StoreError, UsageError, VerificationError
from refusalkit.journal._checkpoint import (
    Checkpoint,
    open_checkpoint,
    parse_checkpoint_body,
    sign_checkpoint,
)
from refusalkit.journal._note import NoteVerifier, open_note, parse_note, valid_key_name
from refusalkit.journal._receipt import Receipt
from refusalkit.journal._records import FIELDS, EntryRow, index_fields
from refusalkit.journal._signer_state import SignerState
from refusalkit.journal._signing_rule import (
    AnchorSource,
    SigningProof,
    check_keyring,
    check_signing,
)
from refusalkit.journal._store import JOURNAL_FORMAT, Query, Store
from refusalkit.journal._time import normalise_time
from refusalkit.journal._tree import (
    Node,
    consistency_ranges,
    frontier_nodes,
    hashes_for_ranges,
    inclusion_ranges,
    leaf_hash,
    root_from_frontier,
)
from refusalkit.journal._verify import LogSource, VerifyReport, verify_log
from refusalkit.keyring import Keyring
from refusalkit.model import canonical_json

__all__ = ["Journal", "open_journal", "open_store"]

_PAGE = 1000
_AUTO_MAINTAIN_SLACK = 2


def open_store(store: str | Path, *, create: bool = True) -> Store:
    """The store at ``store``: a ``postgresql://`` URL or an SQLite file path.

    Without ``create`` a missing store is a ``StoreError`` and nothing is created.
    """
    text = str(store)
    if text.startswith(("postgresql://", "postgres://")):
        from refusalkit.journal._store_postgres import PostgresStore  # noqa: PLC0415 (optional dep)

        return PostgresStore(text, create=create)
    from refusalkit.journal._store_sqlite import SqliteStore  # noqa: PLC0415 (keep import light)

    return SqliteStore(text, create=create)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _default_origin() -> str:
    return f"refusalkit.local/journal/{secrets.token_hex(8)}"


def _check_origin(origin: str) -> str:
    if not valid_key_name(origin):
        raise UsageError(
            f"origin {origin!r} is not usable",
            hint="Use a schema-less URL without spaces or '+', e.g. example.com/decisions.",
        )
    return origin


def open_journal(
    store: str | Path,
    keyring: Keyring,
    *,
    origin: str | None = None,
    create: bool = True,
    signer_state: str | Path | None = None,
) -> Journal:
    """Open the journal at ``store`` (file path or ``postgresql://`` URL), creating it if missing.

    ``origin`` names a new journal (default: a random one); for an existing journal it must match.
    With ``create=False`` (for readers and verifiers) a missing store raises ``StoreError``
    ("no journal at ...", or "not a refusalkit journal" for a database without its tables).

    ``signer_state`` is the directory of the signer's state (``signer_state_dir(keyring_path)``,
    beside the keyring file): ``checkpoint`` then signs only trees that extend the last checkpoint
    it remembers signing. Without it, the store's own latest checkpoint is the anchor, which a
    store holder can delete (docs/design/journal.md, "Signer state"); the CLI and the service
    always pass one.
    """
    backend = open_store(store, create=create)
    try:
        stored, created = _settle_origin(backend, origin)
        state = SignerState(Path(signer_state), stored) if signer_state is not None else None
        if state is not None and created:
            state.known.register(stored)  # the origin belongs to the keyring that created it
    except BaseException:
        backend.close()
        raise
    return Journal(backend, keyring, stored, state)


def _settle_origin(backend: Store, origin: str | None) -> tuple[str, bool]:
    """The journal's origin (the stored one, which a given ``origin`` must equal), and whether
    this call gave it one (a new journal)."""
    meta = backend.meta()
    if meta.get("format") != JOURNAL_FORMAT:
        raise StoreError(
            f"{backend.location} holds format {meta.get('format')!r}, not {JOURNAL_FORMAT}"
        )
    wanted = _check_origin(origin) if origin is not None else None
    proposed = wanted or _default_origin()
    stored = backend.set_meta("origin", proposed, replace=False)
    if wanted is not None and stored != wanted:
        raise StoreError(
            f"journal {backend.location} has origin {stored!r}, not {wanted!r}",
            hint="Open it without --origin, or use another store for another log.",
        )
    return stored, "origin" not in meta and stored == proposed


def _records_to_rows(records: Iterable[Mapping[str, Any]]) -> list[EntryRow]:
    """Entry rows: RFC 8785 bytes, RFC 9162 leaf hash and index columns of each record."""
    if isinstance(records, Mapping):
        raise UsageError("append takes a sequence of records, not one record")
    rows = []
    for number, record in enumerate(records):
        plain = record if type(record) is dict else _as_dict(number, record)
        try:
            # A right-sized copy: keeping orjson's own output objects (a batch keeps 1,000) made
            # each one cost ~5 µs more in heap page faults; the copy costs ~0.1 µs (measured).
            data = bytes(memoryview(canonical_json(plain)))
        except (ValueError, TypeError) as exc:
            raise UsageError(f"record {number} has no RFC 8785 form: {exc}") from exc
        rows.append((data, leaf_hash(data), *index_fields(plain)))
    return rows


def _encoded_to_rows(entries: Iterable[tuple[bytes, tuple[str | None, ...]]]) -> list[EntryRow]:
    """Entry rows of entries whose RFC 8785 bytes and index columns the caller made."""
    rows, width = [], len(FIELDS)
    for number, (data, fields) in enumerate(entries):
        if type(data) is not bytes or len(fields) != width:
            raise UsageError(
                f"entry {number} is not (RFC 8785 bytes, {width} index fields)",
                hint="Use Journal.append for records; append_encoded takes encoded entries.",
            )
        rows.append((data, leaf_hash(data), *fields))
    return rows


def _bounds(since: str | None, until: str | None) -> tuple[str | None, str | None]:
    """RFC 3339 bounds in the indexed form of ``decided_at`` (``UsageError`` when invalid)."""
    return (
        None if since is None else normalise_time(since, name="since"),
        None if until is None else normalise_time(until, name="until", end_of_day=True),
    )


def _as_dict(number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, Mapping):
        raise UsageError(f"record {number} is a {type(record).__name__}, not a JSON object")
    return dict(record)


class Journal:
    """A transparency log of records in one store, signed with one keyring. A context manager."""

    def __init__(
        self, store: Store, keyring: Keyring, origin: str, signer: SignerState | None = None
    ) -> None:
        self._store = store
        self._keyring = keyring
        self.origin = origin
        self.signer = signer
        self._keyring_checked = False
        self._publics: dict[str, bytes] = {}  # the keyring is frozen: derive each key once

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release the store's connection."""
        self._store.close()

    @property
    def store(self) -> Store:
        """The underlying store (for tools; not a stable API)."""
        return self._store

    @property
    def key_name(self) -> str:
        """The signed-note key name: the origin, as c2sp.org/tlog-checkpoint recommends."""
        return self.origin

    def public_key_bytes(self) -> bytes:
        """The 32 raw bytes of the active Ed25519 signing key's public key."""
        return self._public(self._keyring.signing_active)

    def _public(self, key_id: str) -> bytes:
        """The public key of ``key_id``, derived once (RFC 8032 §5.1.5 costs a scalar product)."""
        found = self._publics.get(key_id)
        if found is None:
            found = self._publics[key_id] = self._keyring.public_key_bytes(key_id)
        return found

    def verifier_key(self) -> str:
        """The active key as a C2SP verifier key string ``name+id+base64``."""
        return NoteVerifier.for_key(self.key_name, self.public_key_bytes()).vkey

    def trusted(self) -> list[NoteVerifier]:
        """Verifiers for every signing key of the keyring (old keys stay trusted after rotation)."""
        return [
            NoteVerifier.for_key(self.key_name, self._public(kid))
            for kid in self._keyring.signing_keys
        ]

    # appending and reading ---------------------------------------------------------------

    def append(self, records: Sequence[Mapping[str, Any]]) -> list[int]:
        """Append records as RFC 8785 entries in one transaction; durable when it returns."""
        return self._append_rows(_records_to_rows(records))

    def append_encoded(self, entries: Sequence[tuple[bytes, tuple[str | None, ...]]]) -> list[int]:
        """Append entries already encoded: each its RFC 8785 bytes and its index columns.

        For a writer that encodes records itself (the service, with ``DecisionEncoder``); the
        caller vouches that the bytes are the RFC 8785 form of a JSON object. The columns must be
        its ``index_fields``; ``verify`` recomputes them from the bytes and names any mismatch.
        """
        return self._append_rows(_encoded_to_rows(entries))

    def append_claiming(
        self, records: Sequence[Mapping[str, Any]], claims: Sequence[str]
    ) -> list[int]:
        """Append records and record each of ``claims`` once, in one transaction, or nothing:
        a claim already recorded raises ``ClaimTakenError`` naming the entry that made it (the
        use of an approval grant, docs/design/approvals.md)."""
        return self._append_rows(_records_to_rows(records), claims)

    def _append_rows(self, rows: list[EntryRow], claims: Sequence[str] = ()) -> list[int]:
        if not rows:
            return []
        if not self._keyring_checked:
            self.check_keyring()
        first = self._store.append_claiming(rows, claims) if claims else self._store.append(rows)
        with contextlib.suppress(StoreError):  # the records are durable: never fail them now
            self._store.maintain(slack=_AUTO_MAINTAIN_SLACK)
        return list(range(first, first + len(rows)))

    def maintain(self) -> bool:
        """Housekeeping kept off the append's commit: on SQLite, a PASSIVE WAL checkpoint once
        enough was appended since the last one. Returns whether any work was done.

        A long-running writer (the service) calls this between appends, after answering;
        ``append`` also runs it itself when the backlog grows to twice the threshold, so the WAL
        stays bounded for callers that never call it. Not needed for durability.
        """
        return self._store.maintain()

    def bound_lock_wait(self, seconds: float) -> None:
        """Let an append wait at most ``seconds`` for another writer's lock (on SQLite; the
        default is a minute), then fail: for a writer whose callers wait no longer than that
        anyway (the in-process enforcer, whose leading caller commits itself)."""
        self._store.bound_lock_wait(seconds)

    def size(self) -> int:
        """How many entries the log holds."""
        return self._store.size()

    def entries(self, start: int, end: int) -> list[bytes]:
        """The entry bytes of indices ``[start, end)``."""
        size = self.size()
        if not 0 <= start <= end <= size:
            raise ProofError(f"entries [{start}, {end}) are not in a log of size {size}")
        rows = self._store.entries(start, end)
        if [i for i, _ in rows] != list(range(start, end)):
            raise StoreError(
                f"journal {self._store.location} is missing entries in [{start}, {end})"
            )
        return [data for _, data in rows]

    # checkpoints ------------------------------------------------------------------------

    def _store_keys(self) -> tuple[str, ...]:
        return tuple(json.loads(self._store.meta().get("keys", "[]")))

    def check_keyring(self) -> None:
        """Raise ``KeyringError`` (naming both key IDs) unless this keyring holds a key that
        signed the store before: a process started with another keyring refuses at once."""
        check_keyring(self.origin, self._store_keys(), [v.vkey for v in self.trusted()])
        self._keyring_checked = True

    def _record_key(self, vkey: str) -> None:
        known = json.loads(self._store.meta().get("keys", "[]"))
        if vkey not in known:
            self._store.set_meta("keys", json.dumps(sorted({*known, vkey})))

    def _head(self) -> Checkpoint:
        """The store's tree head (unsigned), from its frontier nodes."""
        size, have = self._store.snapshot()
        wanted = frontier_nodes(size)
        if len(have) != len(wanted):
            raise StoreError(f"journal {self._store.location} is corrupt: tree nodes are missing")
        return Checkpoint(self.origin, size, root_from_frontier([have[n] for n in wanted]))

    def was_signed(self) -> bool:
        """Whether the store says a key ever signed it (checkpoints, their count, or keys)."""
        meta = self._store.meta()
        return bool(
            self._store.latest_checkpoint()
            or self._store.recorded_checkpoints()
            or json.loads(meta.get("keys", "[]"))
        )

    def _anchor(self, adopt: bool) -> tuple[Checkpoint | None, str | None, AnchorSource]:
        """The checkpoint a new one must extend, its note and where it came from: the signer's
        last, else (no signer state kept) the store's latest that a trusted key signed, else
        (``adopt``: the signer state is lost or damaged) the store's latest after a full
        verify. Reads only; the signing rule decides."""
        if self.signer is None:
            latest = self._store.latest_checkpoint()
            if latest is None:
                return None, None, AnchorSource.NONE
            opened = open_checkpoint(latest[1], self.trusted(), origin=self.origin)
            return opened, latest[1], AnchorSource.STORE
        try:
            remembered = self.signer.load()
        except StoreError:
            if not adopt:
                raise
            remembered = None  # damaged: the operator reviewed the store and adopts it
        if remembered is not None:
            return remembered[0], remembered[1], AnchorSource.SIGNER_STATE
        if not adopt or not self.was_signed():
            return None, None, AnchorSource.NONE
        self.verify()
        latest = self._store.latest_checkpoint()
        if latest is None:
            return None, None, AnchorSource.NONE
        return parse_checkpoint_body(parse_note(latest[1])[0]), latest[1], AnchorSource.ADOPTED

    def _signing_proof(self, adopt: bool, new_origin: bool) -> tuple[SigningProof, str | None]:
        """Gather what the signing rule decides on (all the I/O of signing but the write).

        Whether the store was signed before is read first: without a signer state there is no
        lock, and another writer may sign between two reads. Read in this order, a checkpoint
        signed in between is the anchor; read the other way, it looked like a deleted one."""
        signed_before = self.was_signed()
        known = None
        if self.signer is not None:
            if new_origin:
                self.signer.known.register(self.origin)  # the operator's explicit adoption
            known = self.signer.known.origins()
        own = tuple(v.vkey for v in self.trusted())
        if known is not None and self.origin not in known:  # decide before any adopt verify
            anchor, note, source = None, None, AnchorSource.NONE
        else:
            anchor, note, source = self._anchor(adopt)
        head = self._head()
        proof: list[bytes] = []
        if anchor is not None and 0 < anchor.size < head.size:
            proof = [
                bytes.fromhex(h) for h in self.consistency_proof(anchor.size, head.size)["hashes"]
            ]
        signed = SigningProof(
            head=head,
            anchor=anchor,
            anchor_source=source,
            consistency=tuple(proof),
            known_origins=known,
            store_signed_before=signed_before,
            store_keys=self._store_keys(),
            own_keys=own,
        )
        return signed, note

    def _signed_latest(self, head: Checkpoint) -> str | None:
        """The store's latest note when it is a valid checkpoint of ``head`` (else None)."""
        latest = self._store.latest_checkpoint()
        if latest is None or parse_note(latest[1])[0] != head.body():
            return None
        try:
            open_checkpoint(latest[1], self.trusted(), origin=self.origin)
        except VerificationError:
            return None
        return latest[1]

    def checkpoint(self, *, adopt: bool = False, new_origin: bool = False) -> str:
        """Sign and store a checkpoint for the current size; returns the C2SP signed note.

        Signs only what the signing rule allows (``refusalkit.journal._signing_rule``): a
        keyring that signed the store before, an origin it created or adopted, a tree that
        extends the last checkpoint signed (``NotAnExtensionError`` otherwise, and nothing is
        signed). ``adopt`` lets a signer whose state is lost or damaged adopt the store's latest
        checkpoint after a full verify; ``new_origin`` adopts the store's origin for this
        keyring. Returns the stored note (with any cosignatures) when the latest checkpoint
        already has this tree.
        """
        self.check_keyring()  # before any anchor is read with this keyring's keys
        with self.signer.locked() if self.signer else contextlib.nullcontext():
            proof, anchor_note = self._signing_proof(adopt, new_origin)
            check_signing(proof)
            head = proof.head
            if self.signer is not None and proof.anchor_source is AnchorSource.ADOPTED:
                assert anchor_note is not None
                self.signer.save(anchor_note)  # adopted: from now on the store must extend it
            latest = self._signed_latest(head)
            if latest is not None:
                if self.signer is not None and (
                    proof.anchor is None or proof.anchor.size < head.size
                ):
                    self.signer.save(latest)
                return latest
            note = sign_checkpoint(head, self._keyring.signing_key())
            if self.signer is not None:
                self.signer.save(note)
            self._record_key(self.verifier_key())
            self._store.add_checkpoint(head.size, note)
        return note

    def add_cosignatures(self, note: str) -> str:
        """Store the signature lines of ``note`` (e.g. witnesses' C2SP cosignatures) with the
        stored checkpoint of the same text; returns the stored note. Lines are kept as given:
        verifiers check cosignatures against the witness keys they trust."""
        text, extra = parse_note(note)
        latest = self._store.latest_checkpoint()
        candidates = [latest] if latest else []
        if latest is None or parse_note(latest[1])[0] != text:  # rarely: an older checkpoint
            candidates = list(reversed(self._store.checkpoints()))
        for size, stored in candidates:
            have_text, have = parse_note(stored)
            if have_text != text:
                continue
            merged = [*have, *(s for s in extra if s not in have)]
            if len(merged) == len(have):
                return stored
            updated = f"{text}\n{''.join(s.line() for s in merged)}"
            self._store.replace_checkpoint(size, stored, updated)
            return updated
        raise ProofError("no stored checkpoint has this text; sign it first")

    def latest_checkpoint(self) -> str | None:
        """The most recent signed checkpoint, or None before the first."""
        latest = self._store.latest_checkpoint()
        return latest[1] if latest else None

    def checkpoints(self) -> list[str]:
        """Every stored checkpoint, oldest first."""
        return [note for _, note in self._store.checkpoints()]

    # proofs -----------------------------------------------------------------------------

    def _fetch(self, wanted: list[Node]) -> dict[Node, bytes]:
        return self._store.nodes(wanted)

    def _tree_size(self, size: int | None) -> int:
        current = self.size()
        if size is None:
            return current
        if not 0 < size <= current:
            raise ProofError(f"size {size} is not between 1 and the log's size {current}")
        return size

    def inclusion_proof(self, index: int, size: int | None = None) -> dict[str, Any]:
        """RFC 9162 §2.1.3 inclusion proof of ``index`` in the tree of ``size`` (default: now)."""
        n = self._tree_size(size)
        if not 0 <= index < n:
            raise ProofError(f"index {index} is not in a tree of size {n}")
        *path, leaf = hashes_for_ranges(
            [*inclusion_ranges(index, n), (index, index + 1)], self._fetch
        )
        return {
            "index": index,
            "tree_size": n,
            "leaf_hash": leaf.hex(),
            "hashes": [h.hex() for h in path],
        }

    def consistency_proof(self, old: int, new: int | None = None) -> dict[str, Any]:
        """RFC 9162 §2.1.4 consistency proof from size ``old`` to ``new`` (default: now)."""
        n = self._tree_size(new)
        if not 0 < old <= n:
            raise ProofError(f"old size {old} is not between 1 and the new size {n}")
        path = hashes_for_ranges(consistency_ranges(old, n), self._fetch) if old < n else []
        return {"old": old, "new": n, "hashes": [h.hex() for h in path]}

    def _covering_checkpoint(self, index: int, sign: bool) -> tuple[Checkpoint, str]:
        latest = self._store.latest_checkpoint()
        if latest and latest[0] > index:
            note = latest[1]
        elif sign:
            note = self.checkpoint()
        else:
            raise ProofError(
                f"entry {index} is not yet in a signed checkpoint "
                f"(the latest covers {latest[0] if latest else 0} entries)",
                hint="Ask again after the next checkpoint; the service signs on a schedule.",
            )
        return open_checkpoint(note, self.trusted(), origin=self.origin), note

    def receipt(self, index: int, *, sign: bool = True) -> Receipt:
        """A receipt for ``index``: its inclusion proof against a signed checkpoint covering it.

        With ``sign`` (the operator's tools), a checkpoint is signed first when none covers the
        entry yet; without it (a reader, such as the service's routes) that is a ``ProofError``.
        """
        if not 0 <= index < self.size():
            raise ProofError(f"index {index} is not in a log of size {self.size()}")
        checkpoint, note = self._covering_checkpoint(index, sign)
        proof = self.inclusion_proof(index, checkpoint.size)
        signer = open_note(note, self.trusted()).verified[0]
        public = next(v.public_key for v in self.trusted() if v.key_id == signer.key_id)
        return Receipt(
            index=index,
            tree_size=checkpoint.size,
            leaf_hash=proof["leaf_hash"],
            hashes=tuple(proof["hashes"]),
            checkpoint=note,
            origin=self.origin,
            key_name=self.key_name,
            public_key=base64.b64encode(public).decode("ascii"),
        )

    # queries ----------------------------------------------------------------------------

    def query(
        self,
        *,
        schema: str | None = None,
        action: str | None = None,
        reason_code: str | None = None,
        matched_rule: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        since: str | None = None,
        until: str | None = None,
        limit: int | None = None,
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(index, record)`` of matching entries in index order; since/until bound decided_at."""
        since, until = _bounds(since, until)
        query = Query(schema, action, reason_code, matched_rule, agent, session, since, until)
        left, after = limit, -1
        while left is None or left > 0:
            page = self._store.select(query, after, _PAGE if left is None else min(left, _PAGE))
            for index, data in page:
                yield index, json.loads(data)
            if not page:
                return
            after = page[-1][0]
            left = None if left is None else left - len(page)

    def stats(self, *, since: str | None = None, until: str | None = None) -> dict[str, Any]:
        """Entry counts (in the time range): total, by action, reason code, rule and schema."""
        start, end = _bounds(since, until)
        query = Query(since=start, until=end)
        by_schema = self._store.counts(query, "schema")
        return {
            "total": sum(by_schema.values()),
            "by_action": self._store.counts(query, "action"),
            "by_reason_code": self._store.counts(query, "reason_code"),
            "by_rule": self._store.counts(query, "matched_rule"),
            "by_schema": by_schema,
        }

    # verification -----------------------------------------------------------------------

    def verify(
        self,
        *,
        progress: Callable[[int], None] | None = None,
        anchors: Sequence[tuple[str, str]] = (),
        trusted: Sequence[NoteVerifier] | None = None,
    ) -> VerifyReport:
        """Recompute the tree from the stored entries; check stored nodes and every checkpoint.

        Also recomputes each entry's index columns (what ``query`` and ``stats`` filter on) from
        its bytes, and notices deleted checkpoints by the count recorded with each one.
        Raises ``VerificationError`` (``index`` = first bad entry) on any failure. ``progress``
        is called with the number of entries hashed so far, now and then. ``anchors`` are
        ``(label, signed note)`` checkpoints held outside the store, which it must extend;
        ``trusted`` replaces the keyring's keys (an examiner's ``--public-key``).
        """
        # Read in this order so that appends by other writers meanwhile never look like tampering:
        # checkpoints only cover committed sizes, and rows counted before the second head read
        # all lie below it in an honest log.
        recorded = self._store.recorded_checkpoints()
        checkpoints = self.checkpoints()
        size = self._store.size()
        count, top = self._store.entry_count()
        after = self._store.size()
        source = LogSource(
            size=size,
            entries=self._store.iter_indexed(0, size),
            extra_entries=max(0, count - after, top + 1 - after),
            checkpoints=checkpoints,
            progress=progress,
            indexed=True,
            recorded_checkpoints=recorded,
            signed_before=bool(json.loads(self._store.meta().get("keys", "[]"))),
            anchors=anchors,
        )
        keys = list(trusted) if trusted else self.trusted()
        if not keys:
            raise KeyringError("the keyring has no signing key to verify checkpoints with")
        return verify_log(source, self.origin, keys)
