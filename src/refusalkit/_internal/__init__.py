"""refusalkit's shared internal layer: what several packages use and none of their users call.

Not public API (nothing here is pinned by tests/test_public_api.py, and any of it may change in
any release). Every package may import these modules; they import only the record model, the
errors, the redaction key and each other, never a package above them, so that a stdio MCP
gateway or an in-process enforcer gets them without the HTTP service (docs/design/architecture.md,
The shared internal layer):

- ``records``: slot-filling builders of ``Decision``/``WhyStep`` for the engines' hot paths
  (``make_decision`` derives the reason-code version from the code and refuses an invalid
  record), and the shared bounded ``Subjects`` cache.
- ``stamps``: a UUIDv7 decision id and its RFC 3339 timestamp from one clock reading.
- ``source``: the YAML/JSON reader that maps key paths to lines (pack, cases, mapping files).
- ``texts``: the stage message texts, written once.
- ``failclosed``: the one builder of a fail-closed decision, and the one safe request digest.
- ``results``: a tool result checked before a model reads it (the scanner handed in), session
  taint, the result record and the ``@results`` refusal: the MCP gateway's and the framework
  integrations' one path.
- ``keys``, ``auth``, ``apierrors``: the API-key store and scopes, the key check, and the typed
  JSON error body that the service and the MCP proxy share (``apierrors`` needs Starlette, which
  both have; nothing here needs FastAPI).
"""

__all__: list[str] = []
