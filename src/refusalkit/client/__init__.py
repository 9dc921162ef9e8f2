"""A client for the refusalkit HTTP service, usable as an ``Enforcer`` (docs/design/client.md).

``Client(url, api_key=KEY)`` decides over ``POST /v1/decide`` and ``/v1/decide/batch`` and never
raises while deciding: a service that cannot be reached gives a local ``deny`` + ``unavailable``.
With ``public_key=`` (the journal's Ed25519 key, pinned), ``checkpoint()`` and
``verify_inclusion(decision)`` check the service's signed log offline.
"""

from refusalkit.client._async import AsyncClient
from refusalkit.client._sync import Client

__all__ = ["AsyncClient", "Client"]
