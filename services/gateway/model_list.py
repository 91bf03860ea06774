"""``GET /v1/models``: the default provider's model list, passed through."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from services.gateway import proxy
from services.gateway.auth import authenticate_client
from services.gateway.state import state_of


async def list_models(request: Request) -> Response:
    """Authenticate, then forward ``GET /models`` to the default provider (status preserved)."""
    state = state_of(request)
    await authenticate_client(request, state.store)
    reply = await proxy.get_json(state.upstream, state.providers["default"], "/models")
    return Response(reply.body, status_code=reply.status, media_type=reply.media_type)
