"""The HTTP service: decide over HTTP, journal every decision, read the journal, watch it (issue 6).

``create_app(config)`` builds the FastAPI app; ``serve(config, ...)`` runs it on uvicorn (one or
several workers); ``KeyStore`` manages the API keys file. See docs/service.md.
"""

from refusalkit.server._app import app_from_environment, create_app
from refusalkit.server._auth import Authenticator
from refusalkit.server._config import ServiceConfig
from refusalkit.server._errors import ApiError, ErrorCode, error_response
from refusalkit.server._journal_io import JournalAccess
from refusalkit.server._keys import KEYS_SCHEMA, ApiKey, KeyStore, Scope, hash_key, parse_scopes
from refusalkit.server._run import serve

__all__ = [
    "KEYS_SCHEMA",
    "ApiError",
    "ApiKey",
    "Authenticator",
    "ErrorCode",
    "JournalAccess",
    "KeyStore",
    "Scope",
    "ServiceConfig",
    "app_from_environment",
    "create_app",
    "error_response",
    "hash_key",
    "parse_scopes",
    "serve",
]
