"""The HTTP service: decide over HTTP, journal every decision, read the journal, watch it.

``create_app(config)`` builds the FastAPI app; ``serve(config, ...)`` runs it on uvicorn (one or
several workers); ``KeyStore`` manages the API keys file. See docs/service.md.
"""

from refusalkit.server._app import app_from_environment, create_app
from refusalkit.server._config import ServiceConfig
from refusalkit.server._errors import ErrorCode
from refusalkit.server._keys import ApiKey, KeyStore, Scope, parse_scopes
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
