"""Who is calling the management API: the admin token or a client key (:class:`Principal`).

Rules (see "Tenancy and access" in ``docs/ARCHITECTURE.md``): the admin token
(``MNEMOGATE_ADMIN_TOKEN``) is checked first; with no admin token configured admin access is off (a
non-key bearer is 401). Any other bearer must be an active client API key (else 401).
"""

from __future__ import annotations

from starlette.requests import Request

from services.gateway.auth import authenticate_client, is_admin
from services.gateway.state import state_of
from shared.access_policy import Principal
from shared.errors import AuthenticationFailed, PermissionDenied


async def principal_of(request: Request) -> Principal:
    """The admin, or the client key presented by ``request``.

    Raises:
        AuthenticationFailed (401): no bearer token, or neither the admin token nor a valid key.
    """
    state = state_of(request)
    if is_admin(request, state.settings.admin_token):
        return Principal(admin=True)
    key = await authenticate_client(request, state.store)
    return Principal(admin=False, key_id=key.id)


async def require_admin(request: Request) -> Principal:
    """The admin principal, for deployment-wide endpoints (settings).

    Raises:
        AuthenticationFailed (401): admin access is off (no admin token configured) or the
            bearer is neither the admin token nor a valid key.
        PermissionDenied (403): a valid client key (settings are the operator's).
    """
    state = state_of(request)
    if not state.settings.admin_token:
        raise AuthenticationFailed("the admin API is disabled: set MNEMOGATE_ADMIN_TOKEN")
    principal = await principal_of(request)
    if not principal.admin:
        raise PermissionDenied("this endpoint needs the admin token")
    return principal
