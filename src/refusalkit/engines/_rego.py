"""The Rego adapter, in-process through ``regopy`` (rego-cpp) (docs/design/engines.md §Rego).

``rego:DIR --query data.PKG.decision``: every ``*.rego`` file under DIR (and ``data.json``
files, placed at their directory's path, as in an OPA bundle) is loaded once and the query is
compiled once. Per request the mapped input is set and the compiled query runs. Its value is
the decision document (``_document``); undefined, an evaluation error, or a built-in error
(strict built-in errors are on: an erroring rule is not silently skipped) is ``unavailable``.
The bundle's ``.manifest`` revision, if any, is the policy version; ``policy.digest`` covers
every file loaded.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._document import document_outcome
from refusalkit.engines._mapping import EngineMapping
from refusalkit.engines._record import Outcome, Recorder, source_digest
from refusalkit.errors import PolicyError, UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import EngineRef, PolicyRef

__all__ = ["RegoAdapter", "check_query"]

_QUERY = re.compile(r"^data(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_ERRORMSG = re.compile(r"errormsg \d+:([^)\n]*)")
_PLACE = re.compile(r"^-- (\S+:\d+:\d+)$", re.MULTILINE)
_HINT = "Fix the Rego policy; `opa check DIR` (or `opa eval`) shows the error with its line."
_INSTALL = "Install the Rego extra: pip install 'refusalkit[rego]'."


def check_query(query: str) -> str:
    """A query must name a document: ``data.PKG.RULE`` (dotted identifiers)."""
    if not _QUERY.match(query):
        raise UsageError(
            f"not a Rego document path: {query!r}",
            hint="Give --query data.PKG.decision (the rule computing the decision document).",
        )
    return query


def _regopy() -> Any:
    """regopy, imported after google-re2 (refusalkit's regex engine).

    Both carry RE2; whichever native library loads first provides the shared symbols, and in the
    other order google-re2 corrupts the heap on its next compile (an abort). refusalkit imports
    re2 first; a program that imports regopy itself must import refusalkit (or re2) before it.
    """
    import re2  # noqa: F401, PLC0415 (load order: see above)

    try:
        import regopy  # noqa: PLC0415 (an optional extra)
    except ImportError as exc:
        raise UsageError("the Rego adapter needs regopy", hint=_INSTALL) from exc
    return regopy


def _files(root: Path) -> list[Path]:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise PolicyError("no such file or directory", file=str(root), hint="Check the path.")
    found = [p for p in sorted(root.rglob("*")) if p.is_file()]
    return [p for p in found if p.suffix == ".rego" or p.name in ("data.json", ".manifest")]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PolicyError(f"cannot read: {exc.strerror}", file=str(path)) from exc


def _json(path: Path, content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError as exc:
        raise PolicyError(f"not valid JSON: {exc}", file=str(path), hint=_HINT) from exc


class RegoAdapter(Adapter):
    """Rego policies through regopy, deciding by a decision document (module docstring)."""

    kind = "rego"

    def __init__(
        self,
        source: str | Path,
        keyring: Keyring,
        *,
        query: str,
        mapping: EngineMapping | None = None,
        deadline_ms: float = 50.0,
    ) -> None:
        regopy = _regopy()
        root = Path(source)
        self.query = check_query(query)
        self.mapping = mapping or EngineMapping()
        self._lock = threading.Lock()
        self._interpreter = regopy.Interpreter()
        self._interpreter.strict_built_in_errors = True
        files = _files(root)
        base = root if root.is_dir() else root.parent
        contents = [(p, _read(p)) for p in files]
        revision = self._load(contents, base, regopy)
        try:
            with _quiet_stdout() as printed:
                self._bundle = self._interpreter.build(self.query)
        except regopy.RegoError as exc:
            problem = f"the policy or query does not compile: {_compile_error(exc, printed)}"
            raise PolicyError(problem, file=str(root), hint=_HINT) from exc
        engine = EngineRef("rego", f"regopy {metadata.version('regopy')}")
        policy = PolicyRef(
            self.mapping.policy_id or root.stem,
            self.mapping.policy_version or revision or "unversioned",
            source_digest((p.relative_to(base).as_posix(), c) for p, c in contents),
        )
        super().__init__(Recorder(keyring, engine, policy, self.mapping), deadline_ms)

    def _load(self, contents: list[tuple[Path, bytes]], base: Path, regopy: Any) -> str | None:
        revision = None
        if not any(p.suffix == ".rego" for p, _ in contents):
            raise PolicyError("no .rego files", file=str(base), hint=_HINT)
        for path, content in contents:
            if path.name == ".manifest":
                manifest = _json(path, content)
                revision = manifest.get("revision") if isinstance(manifest, dict) else None
                continue
            if path.name == "data.json":
                data: Any = _json(path, content)
                for part in reversed(path.parent.relative_to(base).parts):
                    data = {part: data}
                self._interpreter.add_data(data)
                continue
            try:
                with _quiet_stdout() as printed:
                    self._interpreter.add_module(str(path.relative_to(base)), content.decode())
            except (regopy.RegoError, UnicodeDecodeError) as exc:
                problem = f"not valid Rego: {_compile_error(exc, printed)}"
                raise PolicyError(problem, file=str(path), hint=_HINT) from exc
        return revision if isinstance(revision, str) and revision else None

    def engine_answer(self, request: Mapping[str, Any]) -> Any:
        """What the Rego engine alone says: the document, or None when it is undefined.

        Raises ``AdapterFailure`` on an evaluation error.
        """
        value = self.mapping.engine_input(request)
        with self._lock:
            self._interpreter.set_input(value)
            output = self._interpreter.query_bundle(self._bundle)
        if not output.ok():
            raise AdapterFailure("rego: evaluation error (the query failed)")
        results = output.results
        if not results or not results[0].expressions:
            return None
        return results[0].expressions[0]

    def outcome(self, request: Mapping[str, Any]) -> Outcome:
        document = self.engine_answer(request)
        if document is None:
            raise AdapterFailure(f"rego: {self.query} is undefined")
        return document_outcome(document, request, self.recorder, "rego")


@contextmanager
def _quiet_stdout() -> Iterator[list[str]]:
    """rego-cpp prints compile errors on file descriptor 1; keep them off refusalkit's output.

    Yields a list that holds the captured text afterwards (it names file:line:column).
    """
    captured: list[str] = []
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 1)
        try:
            yield captured
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            captured.append(sink.read().decode("utf-8", "replace"))


def _compile_error(exc: BaseException, printed: list[str]) -> str:
    """The message and place of a compile error: ``Invalid literal (at q.rego:2:1)``."""
    place = _PLACE.search("".join(printed))
    where = f" (at {place.group(1)})" if place else ""
    return _first_line(exc) + where


def _first_line(exc: BaseException) -> str:
    """rego-cpp's first error message (its errors are an AST dump), else the first line."""
    text = str(exc).strip()
    found = _ERRORMSG.search(text)
    if found is not None:
        return found.group(1).strip()
    return text.splitlines()[0] if text else type(exc).__name__
