"""The service's FastAPI side of the key check (``refusalkit._internal.auth``): the bearer scheme
in the OpenAPI document, and ``require(scope)``, the dependency every route declares.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from refusalkit._internal.auth import INSECURE_KEY, Authenticator, bearer_token
from refusalkit._internal.keys import ApiKey, Scope

__all__ = ["INSECURE_KEY", "Authenticator", "bearer", "bearer_token", "require"]

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="ApiKey",
    description="An API key made with `refusalkit service keys add`, sent as a bearer token.",
)

Credentials = Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]


def require(scope: Scope) -> Callable[..., Awaitable[ApiKey]]:
    """A FastAPI dependency: the caller's key, which must have ``scope``."""

    async def dependency(request: Request, _documented: Credentials) -> ApiKey:
        # ``Credentials`` only declares the scheme in the OpenAPI document; the header is read by
        # ``bearer_token``, as on the decide path.
        auth: Authenticator = request.app.state.service.auth
        return auth.check(bearer_token(request.headers.get("authorization")), scope)

    dependency.__name__ = f"require_{scope.value}"
    return dependency
