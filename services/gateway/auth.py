"""Authentication of client API keys.

(Bearer, or ``x-api-key`` on the Messages route) and of the admin token.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request

from shared.errors import AuthenticationFailed
from shared.models import ApiKey
from shared.store import Store


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def authenticate_client(request: Request, store: Store, *, x_api_key: bool = False) -> ApiKey:
    """The active API key presented by the request.

    ``Authorization: Bearer <key>``, or with ``x_api_key`` (the Anthropic Messages route) also
    ``x-api-key: <key>``.

    Raises:
        AuthenticationFailed: no key, or an unknown or revoked key (HTTP 401).
    """
    token = bearer_token(request)
    if token is None and x_api_key:
        token = request.headers.get("x-api-key", "").strip() or None
    if token is None:
        hint = "'x-api-key: <key>' or " if x_api_key else ""
        raise AuthenticationFailed(f"missing api key: send {hint}'Authorization: Bearer <key>'")
    key = await store.keys.authenticate(token)
    if key is None:
        raise AuthenticationFailed("invalid or revoked api key")
    return key


def is_admin(request: Request, admin_token: str) -> bool:
    """True when the bearer token equals the configured admin token (constant-time compare).

    An empty ``admin_token`` disables admin access entirely.
    """
    token = bearer_token(request)
    return bool(admin_token) and token is not None and hmac.compare_digest(token, admin_token)
