"""The HTTP service: decide over HTTP, journal every decision, read the journal, watch it.

``create_app(config)`` builds the FastAPI app; ``serve(config, ...)`` runs it on uvicorn (one or
several workers); ``KeyStore`` manages the API keys file, ``Scope`` and ``parse_scopes`` name what
a key may do, ``ErrorCode`` the stable ``code`` of every error body. See docs/service.md.
"""

from __future__ import annotations

from refusalkit._deprecated import moved as _moved
from refusalkit._internal.apierrors import ErrorCode
from refusalkit._internal.keys import ApiKey, KeyStore, Scope, parse_scopes
from refusalkit.server._app import app_from_environment, create_app
from refusalkit.server._config import ServiceConfig
from refusalkit.server._run import serve

__all__ = [
    "ApiKey",
    "ErrorCode",
    "KeyStore",
    "Scope",
    "ServiceConfig",
    "app_from_environment",
    "create_app",
    "parse_scopes",
    "serve",
]

# Exported only for ``refusalkit.mcp_proxy``, which now takes them from the journal and the
# shared internal layer; importable, with a DeprecationWarning, until 0.3 (CHANGELOG.md).
__getattr__ = _moved(
    __name__,
    {
        "JournalAccess": ("refusalkit.journal", "JournalAccess"),
        "ApiError": ("refusalkit._internal.apierrors", "ApiError"),
        "error_response": ("refusalkit._internal.apierrors", "error_response"),
        "Authenticator": ("refusalkit._internal.auth", "Authenticator"),
    },
)
