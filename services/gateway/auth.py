"""Authentication of client API keys and of the admin token.

Client keys come as ``Authorization: Bearer <key>``, or ``x-api-key`` on the Messages route.
Tokens are compared as bytes: the headers are read from the raw ASGI header bytes (HTTP field
values are octets, RFC 9110 §5.5), so any value a client can send — non-ASCII bytes, obs-text,
stray control bytes — ends in a 401, never in an exception (a ``str`` holding a non-ASCII
character makes :func:`hmac.compare_digest` raise ``TypeError``). See ``docs/ARCHITECTURE.md``
("Authentication").
"""

from __future__ import annotations

import hmac

from starlette.requests import Request

from shared.errors import AuthenticationFailed
from shared.models import ApiKey
from shared.store import Store

_AUTHORIZATION = b"authorization"
_BEARER = b"bearer"
#: Optional whitespace around a field value and between scheme and token (RFC 9110 §5.6.3).
_OWS = b" \t"


def bearer_token_bytes(request: Request) -> bytes | None:
    """The raw token of the first ``Authorization: Bearer <token>`` header, else None.

    The scheme is matched case-insensitively (RFC 9110 §11.1); the token is everything after
    the scheme and its separating whitespace, surrounding whitespace removed, and may hold any
    byte. Never raises.
    """
    for name, value in request.scope.get("headers", ()):
        if bytes(name).lower() == _AUTHORIZATION:
            return _bearer(bytes(value))
    return None


def _bearer(value: bytes) -> bytes | None:
    """The token of one ``Authorization`` value if its scheme is Bearer, else None."""
    scheme, sep, token = value.strip(_OWS).partition(b" ")
    token = token.strip(_OWS)
    return token if sep and scheme.lower() == _BEARER and token else None


def bearer_token(request: Request) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header as text, else None.

    Only an ASCII token is returned (API keys and the admin token sent by real clients are
    ASCII); a token with any other byte is treated as absent. Never raises.
    """
    token = bearer_token_bytes(request)
    if token is None or not token.isascii():
        return None
    return token.decode("ascii")


def _presented_keys(request: Request, *, x_api_key: bool) -> set[bytes]:
    """Every distinct key the request presents (surrounding whitespace removed).

    Each ``Authorization: Bearer`` token and, with ``x_api_key``, each ``x-api-key`` value; an
    ``Authorization`` header of another scheme presents none. Never raises.
    """
    keys: set[bytes] = set()
    for name, value in request.scope.get("headers", ()):
        lower = bytes(name).lower()
        if lower == _AUTHORIZATION:
            token = _bearer(bytes(value))
        elif x_api_key and lower == b"x-api-key":
            token = bytes(value).strip(_OWS) or None
        else:
            continue
        if token is not None:
            keys.add(token)
    return keys


async def authenticate_client(request: Request, store: Store, *, x_api_key: bool = False) -> ApiKey:
    """The active API key presented by the request.

    ``Authorization: Bearer <key>``, or with ``x_api_key`` (the Anthropic Messages route) also
    ``x-api-key: <key>``.

    Raises:
        AuthenticationFailed: no key, a key with non-ASCII bytes (no key has one), an
            unknown or revoked key, or two headers naming different keys (two ``Authorization``
            headers; with ``x_api_key`` also ``x-api-key`` ones) (HTTP 401).
    """
    keys = _presented_keys(request, x_api_key=x_api_key)
    if len(keys) > 1:
        # two keys: answering as either would pick a tenant the caller may not mean
        raise AuthenticationFailed("conflicting api keys: the request names two keys; send one")
    if not keys:
        hint = "'x-api-key: <key>' or " if x_api_key else ""
        raise AuthenticationFailed(f"missing api key: send {hint}'Authorization: Bearer <key>'")
    (raw,) = keys
    if not raw.isascii():
        raise AuthenticationFailed("invalid or revoked api key")
    key = await store.keys.authenticate(raw.decode("ascii"))
    if key is None:
        raise AuthenticationFailed("invalid or revoked api key")
    return key


def is_admin(request: Request, admin_token: str) -> bool:
    """True when the bearer token equals the configured admin token.

    Compared as bytes in constant time (:func:`hmac.compare_digest` on ``bytes``, which accepts
    any byte values).

    The admin token is compared in its UTF-8 encoding. An empty ``admin_token`` disables admin
    access entirely. Never raises.
    """
    token = bearer_token_bytes(request)
    if not admin_token or token is None:
        return False
    return hmac.compare_digest(token, admin_token.encode("utf-8"))
