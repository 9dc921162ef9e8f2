"""The HTTP service: decide over HTTP, journal every decision, read the journal, watch it.

``create_app(config)`` builds the FastAPI app; ``serve(config, ...)`` runs it on uvicorn (one or
several workers); ``KeyStore`` manages the API keys file. See docs/service.md. ``Authenticator``,
``JournalAccess``, ``ApiError`` and ``error_response`` are the pieces ``refusalkit.mcp_proxy``
shares with the service (one key check, one journal opener, one error body).
"""

from refusalkit.server._app import app_from_environment, create_app
from refusalkit.server._auth import Authenticator
from refusalkit.server._config import ServiceConfig
from refusalkit.server._errors import ApiError, ErrorCode, error_response
from refusalkit.server._journal_io import JournalAccess
from refusalkit.server._keys import ApiKey, KeyStore, Scope, parse_scopes
from refusalkit.server._run import serve

__all__ = [
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
    "parse_scopes",
    "serve",
]
