# ruff: noqa: FBT003 (WhyStep's booleans are positional, as in the decide package)
"""The OPA adapter: a running OPA server's Data API (docs/design/engines.md §OPA).

``opa:URL --query data.PKG.decision`` posts ``{"input": …}`` to ``URL/v1/data/PKG/decision
?provenance=true`` (OPA's Data API, "Get a Document (with Input)"). The ``result`` is the
decision document of ``_document``. A missing ``result`` (OPA's answer for an undefined
document: ``200 {}``), any status but 200, a body that is not JSON, a timeout or a connection
error is ``unavailable``. OPA's ``decision_id`` and provenance (OPA version, bundle revisions)
are kept: the engine version is OPA's, the policy version the bundle revisions, and an
``@opa`` step carries the decision id, so the record points at OPA's own decision log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from refusalkit.engines._adapter import Adapter, AdapterFailure
from refusalkit.engines._document import document_outcome
from refusalkit.engines._mapping import EngineMapping
from refusalkit.engines._record import Outcome, Recorder, source_digest
from refusalkit.engines._rego import check_query
from refusalkit.errors import UsageError
from refusalkit.keyring import Keyring
from refusalkit.model import EngineRef, PolicyRef, WhyStep, canonical_json

__all__ = ["OpaAdapter"]


def _endpoint(url: str, query: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"not an OPA server URL: {url!r}", hint="Give opa:http://HOST:8181 and --query."
        )
    path = "/".join(check_query(query).split(".")[1:])
    return f"{url.rstrip('/')}/v1/data/{path}"


def _provenance(body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """OPA's version and the bundle revisions (``name@revision`` joined), when present."""
    provenance = body.get("provenance")
    if not isinstance(provenance, Mapping):
        return None, None
    version = provenance.get("version")
    bundles = provenance.get("bundles")
    revisions = None
    if isinstance(bundles, Mapping) and bundles:
        revisions = ",".join(
            f"{name}@{info.get('revision', '')}"
            for name, info in sorted(bundles.items())
            if isinstance(info, Mapping)
        )
    elif isinstance(provenance.get("revision"), str):
        revisions = provenance["revision"]
    return (version if isinstance(version, str) else None), revisions or None


class OpaAdapter(Adapter):
    """A running OPA server behind refusalkit's decision contract (module docstring)."""

    kind = "opa"

    def __init__(
        self,
        url: str,
        keyring: Keyring,
        *,
        query: str,
        mapping: EngineMapping | None = None,
        deadline_ms: float = 50.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.endpoint = _endpoint(url, query)
        self.mapping = mapping or EngineMapping()
        self._client = client or httpx.Client(timeout=deadline_ms / 1000.0)
        engine = EngineRef("opa", "unknown")
        self.query = query
        policy = PolicyRef(
            self.mapping.policy_id or query,
            self.mapping.policy_version or "unversioned",
            source_digest([(self.endpoint, b"")]),
        )
        super().__init__(Recorder(keyring, engine, policy, self.mapping), deadline_ms)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def engine_answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """OPA's whole answer (``result``, ``decision_id``, ``provenance``) for ``request``."""
        try:
            response = self._client.post(
                self.endpoint,
                params={"provenance": "true"},
                json={"input": self.mapping.engine_input(request)},
            )
        except httpx.TimeoutException as exc:
            raise AdapterFailure("opa: timed out") from exc
        except httpx.HTTPError as exc:
            raise AdapterFailure(f"opa: {type(exc).__name__}") from exc
        if response.status_code != 200:
            raise AdapterFailure(f"opa: HTTP {response.status_code}")
        try:
            body = response.json()
        except ValueError as exc:
            raise AdapterFailure("opa: the answer is not JSON") from exc
        if not isinstance(body, dict):
            raise AdapterFailure("opa: the answer is not a JSON object")
        return body

    def outcome(self, request: Mapping[str, Any]) -> Outcome:
        body = self.engine_answer(request)
        if "result" not in body:
            raise AdapterFailure(f"opa: {self.query} is undefined")
        outcome = document_outcome(body["result"], request, self.recorder, "opa")
        engine, policy = self.refs(body)
        step = self._opa_step(body, outcome.action.value)
        return outcome._replace(steps=(*outcome.steps, step), engine=engine, policy=policy)

    def refs(self, body: Mapping[str, Any]) -> tuple[EngineRef, PolicyRef]:
        """The engine and policy of one answer: OPA's version and the bundle revisions."""
        version, revisions = _provenance(body)
        policy = self.recorder.policy
        if revisions is not None or body.get("provenance"):
            digest = source_digest([(self.endpoint, canonical_json(body.get("provenance") or {}))])
            version_label = self.mapping.policy_version or revisions or policy.version
            policy = PolicyRef(policy.id, version_label, digest)
        return EngineRef("opa", version or self.recorder.engine.version), policy

    @staticmethod
    def _opa_step(body: Mapping[str, Any], effect: str) -> WhyStep:
        """Where OPA's own decision log has this decision: its ``decision_id``."""
        decision_id = body.get("decision_id")
        detail = f"decision_id={decision_id}" if isinstance(decision_id, str) else None
        return WhyStep("@opa", effect, True, False, test="OPA Data API answer", detail=detail)
